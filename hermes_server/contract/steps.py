"""What a scenario step is: one request, what it needs of a server, and the behaviour it shows.

A suite's scenarios are built by a function of `Names` (the prefix everything a run creates
carries: empty for the oracle comparisons, which run on fresh homes, and unique per run for
`verify`, which runs on a server that matters). Steps are data; the few that depend on an
earlier answer name it (`capture`, `{name}` in a path or body) and the player fills it in.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from enum import Enum
from typing import Any

# `Step.auth`: the right key as a bearer (per server; none on a server without a key).
KEY = "key"
# Server pairs of the oracle comparisons: the usual one, one without a key, one whose
# state.db cannot be opened (a directory stands where the file should be).
PAIRS = ("key", "nokey", "broken")


class Need(Enum):
    """What a step needs of the server it runs on; `verify` runs only the steps whose needs it can meet."""

    WRITES = "--write: it creates or changes something"
    CHAT = "--with-chat: it runs a turn of the model"
    SEEDED = "rows only upstream's SessionDB writes, seeded on both sides"
    NO_KEY = "a server started without a key"
    BROKEN_HOME = "a server whose state.db cannot be opened"
    SCRIPTED_MODEL = "a scriptable model (slow turns, approvals, the run cap)"
    BARE_NAMES = "names without a prefix (their meaning depends on how they start or on their exact value)"
    MORE_TURNS = "more turns than one short turn per route"
    NO_TICKER = "a server with no cron ticker (it makes a job due now)"


# The needs the oracle comparisons meet: fresh homes, seeded alike, every pair, the scriptable model.
ORACLE_MEETS = frozenset(Need)


@dataclass(frozen=True)
class Names:
    """How a run names what it creates: every session id, title, job name, conversation name and
    session key starts with `prefix`, and a length a step tests counts the prefix in."""

    prefix: str = ""

    def id(self, name: str) -> str:
        return self.prefix + name

    def fill(self, char: str, length: int) -> str:
        """`length` characters: the prefix, then `char` repeated."""
        return self.prefix + char * (length - len(self.prefix))

    def unknown(self, hex_id: str) -> str:
        """An id of the same form that names nothing: `hex_id` on a fresh home, else one drawn from
        the prefix (a fixed unknown id could be someone's on a server that matters)."""
        if not self.prefix:
            return hex_id
        return hashlib.sha256(self.prefix.encode()).hexdigest()[:len(hex_id)]

    def text(self, text: str) -> str:
        """Message text that must be unique to this run (a derived session id hashes it)."""
        return f"{self.prefix}{text}" if self.prefix else text


@dataclass(frozen=True)
class Step:
    """One request, sent identically to every server of a comparison."""

    name: str
    method: str
    path: str  # `{name}` is an earlier step's captured id
    body: Any = None  # bytes as they are, a callable for a chunked body, None for none, else JSON
    headers: tuple[tuple[str, str | bytes], ...] = ()
    auth: str | bytes | None = KEY  # KEY: the right bearer; None: no header; else the raw header value
    pair: str = "key"
    agent: str = "fast"  # "slow": the comparison's server whose agent plays the scripted model's turns
    headers_only: bool = False  # send the headers (with Content-Length) but never the body
    behaviour: str = ""  # in users' words (docs/api.md, docs/differences.md)
    needs: frozenset[Need] = frozenset()
    listing: bool = False  # it lists what the whole server holds: verify compares its 2xx answer by shape
    figures: bool = False  # it describes the server's own process (pid, uptime, checks): its top level by shape
    capture: str | None = None  # remember this answer's run_id / id / job.id (and session header) so
    wait: tuple[str, ...] | None = None  # poll until the status is one of these
    pause: float = 0.0  # seconds to wait after the step, on every side
    retry: str | None = None  # steps sharing it are run again together when a `live` one raced
    live: bool = False  # the run must still be live here (else the group raced the run's end)
    deviation: str | None = None  # the row of docs/differences.md (D1-D11) where hermes-server differs
    declared: tuple[int, Any] | None = None  # hermes-server's answer to a deviation (status, JSON)
    # Sent after this step to each server that accepted it (2xx), to undo what a deviation let
    # one side create and the other refuse (so later answers stay comparable).
    undo: tuple[Step, ...] = ()

    def encoded(self) -> bytes | Callable[[], Iterable[bytes]] | None:
        if self.body is None or isinstance(self.body, bytes) or callable(self.body):
            return self.body
        return js(self.body)


def js(value: Any) -> bytes:
    return json.dumps(value).encode()


@dataclass
class Builder:
    """Steps added section by section: each section names the behaviour and what its steps need."""

    names: Names
    steps: list[Step] = field(default_factory=list)
    _behaviour: str = ""
    _needs: frozenset[Need] = frozenset()

    def section(self, behaviour: str, *needs: Need) -> None:
        self._behaviour, self._needs = behaviour, frozenset(needs)

    def add(self, name: str, method: str, path: str, body: Any = None, *,
            headers: dict[str, str | bytes] | None = None, needs: Iterable[Need] = (), safe: bool = False,
            **fields: Any) -> None:
        """One step; `safe` (in a writing section): it writes nothing on any server, so it runs without --write."""
        pair = fields.get("pair", "key")
        implied = {"nokey": {Need.NO_KEY}, "broken": {Need.BROKEN_HOME}}.get(pair, set())
        if fields.get("agent") == "slow":
            implied.add(Need.SCRIPTED_MODEL)
        self.steps.append(Step(name, method, path, body, tuple((headers or {}).items()),
                               behaviour=fields.pop("behaviour", self._behaviour),
                               needs=(self._needs - {Need.WRITES} if safe else self._needs) | frozenset(needs)
                               | implied, **fields))

    def __iter__(self) -> Iterator[Step]:
        return iter(self.steps)
