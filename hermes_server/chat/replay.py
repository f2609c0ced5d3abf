"""Idempotency-Key replays of the turns a client waits for (`/v1/chat/completions` and
`/v1/responses`, non-streaming only).

A client that retries a request whose answer it lost must not run the turn twice. A route
names the key and its request's fingerprint (`Idempotency`); the turn's `answer`
(chat/turn.py) takes it as one parameter and goes through the cache.

The 300 s lifetime is measured with `time.monotonic`, not with the server's clock,
in deterministic mode too: it is a span of the process's own time, not a timestamp
the server writes, and every reading of a deterministic clock moves it on by its
step, so a cache that read it would shift every later timestamp of a test by how
often it purged. A fixture reset empties the cache instead (`reset`), which is what
keeps one test's replays out of the next.
"""

from __future__ import annotations

import asyncio
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Generic, TypeVar

T = TypeVar("T")


@dataclass(frozen=True)
class Idempotency:
    """An `Idempotency-Key` a request sent, and what of the request a replay must match."""

    key: str
    fingerprint: str


@dataclass
class ReplayCache(Generic[T]):
    """Upstream's Idempotency-Key cache: a retried request gets the first answer's turn.

    Keyed by the header value; a hit needs the same fingerprint (model, messages,
    tools, tool_choice, stream), and nothing else counts, not even the session
    headers. Entries live 300 s, at most 1,000 are kept; concurrent identical
    requests share one turn. A failed turn is not remembered.
    """

    ttl: float = 300.0
    size: int = 1000
    done: OrderedDict[str, tuple[str, float, T]] = field(default_factory=OrderedDict)
    running: dict[tuple[str, str], asyncio.Task[T]] = field(default_factory=dict)

    def _purge(self) -> None:
        now = time.monotonic()
        for key in [k for k, (_, at, _) in self.done.items() if now - at > self.ttl]:
            del self.done[key]
        while len(self.done) > self.size:
            self.done.popitem(last=False)

    async def run(self, idempotency: Idempotency, start: Callable[[], asyncio.Task[T]]) -> T:
        """The remembered outcome for the key and fingerprint, else the one `start()`'s task produces."""
        key, fingerprint = idempotency.key, idempotency.fingerprint
        self._purge()
        hit = self.done.get(key)
        if hit is not None and hit[0] == fingerprint:
            return hit[2]
        task = self.running.get((key, fingerprint))
        if task is None:
            task = start()
            self.running[(key, fingerprint)] = task

            def remember(done: asyncio.Task[T]) -> None:
                if self.running.get((key, fingerprint)) is done:
                    del self.running[(key, fingerprint)]
                if not done.cancelled() and done.exception() is None:
                    self.done[key] = (fingerprint, time.monotonic(), done.result())
                    self._purge()

            task.add_done_callback(remember)
        return await asyncio.shield(task)

    async def reset(self) -> None:
        """Forget every remembered answer (a registered part of the server's state). A turn
        still running is forgotten too: it finishes, but answers only the requests that wait."""
        self.done.clear()
        self.running.clear()
