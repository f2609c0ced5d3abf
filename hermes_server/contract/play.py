"""Playing steps against several servers at once, in the same order, and shaping their answers.

Each `Side` is one server (or, for the oracle comparisons, one server per pair and agent)
with its key and the ids it captured. `play` sends every step to every side, one side after
the other, and returns the raw answers; `shape` turns them into each side's comparable form
afterwards, in the same order, so a normaliser's id numbering sees what it would have seen
live. Nothing here decides what a difference means: that is the caller's (the oracle
tools' declared deviations, `verify`'s references).
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from hermes_server.contract.masks import Normaliser, by_shape
from hermes_server.contract.steps import KEY, Step
from hermes_server.contract.wire import Answer, Endpoint, exchange

# How often a `retry` group is played again when its stop raced the run's own end.
RETRIES = 3
# How long a `wait` step polls, and how often.
WAIT_SECONDS, WAIT_EVERY = 30.0, 0.05
_PLACEHOLDER = re.compile(r"\{(\w+)\}")
# Statuses of a run that is still live (anything else has settled).
LIVE_STATUSES = (None, "queued", "running", "stopping", "waiting_for_approval")


@dataclass
class Side:
    """One server of a comparison: where each pair and agent listens, the key of each pair, and
    what it captured from its own answers (ids differ between servers, so each keeps its own)."""

    name: str
    endpoints: Mapping[tuple[str, str], Endpoint]  # (pair, agent); a missing agent falls back to "fast"
    keys: Mapping[str, str | None]  # per pair; None: send no bearer
    captured: dict[str, str] = field(default_factory=dict)
    # Called with each answer (verify keeps its ledger of what it created this way).
    observe: Callable[[Step, str, Answer], None] | None = None

    def endpoint(self, step: Step) -> Endpoint:
        return self.endpoints.get((step.pair, step.agent)) or self.endpoints[(step.pair, "fast")]

    def fill(self, text: str) -> str:
        """`{name}` replaced by what this side captured under that name (left as is when nothing was)."""
        if not self.captured:
            return text
        return _PLACEHOLDER.sub(lambda m: self.captured.get(m.group(1), m.group(0)), text)

    def authorization(self, step: Step) -> list[tuple[str, str | bytes]]:
        key = self.keys.get(step.pair)
        if step.auth == KEY:
            return [("Authorization", f"Bearer {key}")] if key else []
        if isinstance(step.auth, str):
            return [("Authorization", step.auth.replace("{key}", key or ""))]
        return [] if step.auth is None else [("Authorization", step.auth)]

    def send(self, step: Step) -> Answer:
        where, auth, path = self.endpoint(step), self.authorization(step), self.fill(step.path)
        if step.wait:
            return self._poll(where, step, path, auth)
        body = step.encoded()
        if isinstance(body, bytes) and self.captured:
            try:
                body = self.fill(body.decode()).encode()
            except UnicodeDecodeError:
                pass
        answer = exchange(where, step.method, path, body, [*auth, *step.headers], announce_only=step.headers_only)
        if step.capture:
            self._capture(step.capture, answer)
        if self.observe is not None:
            self.observe(step, path, answer)
        return answer

    def _poll(self, where: Endpoint, step: Step, path: str, auth: list[tuple[str, str | bytes]]) -> Answer:
        deadline = time.monotonic() + WAIT_SECONDS
        while True:
            answer = exchange(where, step.method, path, None, auth)
            status = answer.json_object().get("status") if answer.status == 200 else None
            if status in (step.wait or ()) or time.monotonic() > deadline:
                return answer
            time.sleep(WAIT_EVERY)

    def _capture(self, name: str, answer: Answer) -> None:
        data = answer.json_object() if answer.headers.get("content-type", "").startswith("application/json") else {}
        found = data.get("run_id") or data.get("id")
        if found is None and isinstance(data.get("job"), dict):
            found = data["job"].get("id")
        if found:
            self.captured[name] = found
        if answer.headers.get("x-hermes-session-id"):
            self.captured[f"{name}_session"] = answer.headers["x-hermes-session-id"]


def without_body(answer: Answer) -> Answer:
    """The answer with no body: what a normaliser may see of one whose body is compared by shape
    (its ids must not advance the numbering of the ids that follow)."""
    return Answer(answer.status, answer.headers, b"")



@dataclass
class Played:
    """One step's answers, by side; `kept` is false for an attempt of a retry group played again."""

    step: Step
    answers: dict[str, Answer]
    kept: bool = True


def groups(steps: Iterable[Step]) -> list[list[Step]]:
    """Consecutive steps with the same `retry` name together; every other step alone."""
    grouped: list[list[Step]] = []
    for step in steps:
        if step.retry and grouped and grouped[-1][0].retry == step.retry:
            grouped[-1].append(step)
        else:
            grouped.append([step])
    return grouped


def settled(answer: Answer) -> bool:
    """A `live` step's answer showing the run had ended already: a status past `stopping`, or
    (0.19.0's stop of a finished run) a 404."""
    if answer.status == 404:
        return True
    return answer.json_object().get("status") not in LIVE_STATUSES


def play(steps: Sequence[Step], sides: Sequence[Side], *, parallel: bool = False,
         on_retry: Callable[[str, int], None] | None = None) -> list[Played]:
    """Every step to every side in order (with `parallel`, a step to all sides at once; each side
    still sees the steps in order). A retry group whose `live` step found its run settled on any
    side is played again (up to RETRIES times): upstream notices a stop when its agent next polls
    the model call (every 0.3 s), so a status read right after a stop may already say `cancelled`.
    That is timing, not the wire, so such a group is played again with a new run."""
    played: list[Played] = []
    with ThreadPoolExecutor(max_workers=len(sides) if parallel else 1) as pool:
        for group in groups(steps):
            played += _play_retried(group, sides, pool if parallel else None, on_retry)
    return played


def _play_retried(group: list[Step], sides: Sequence[Side], pool: ThreadPoolExecutor | None,
                  on_retry: Callable[[str, int], None] | None) -> list[Played]:
    played: list[Played] = []
    attempts = RETRIES if group[0].retry else 1
    for attempt in range(1, attempts + 1):
        this, raced = _play_group(group, sides, pool)
        last = not raced or attempt == attempts
        for item in this:
            item.kept = last
        played += this
        if last:
            break
        if on_retry is not None:
            on_retry(group[0].retry or "", attempt)
    return played


def _play_group(group: list[Step], sides: Sequence[Side], pool: ThreadPoolExecutor | None) -> tuple[list[Played], bool]:
    out, raced = [], False
    for step in group:
        if pool is None:
            answers = {side.name: side.send(step) for side in sides}
        else:
            answers = dict(zip((side.name for side in sides), pool.map(Side.send, sides, [step] * len(sides)),
                               strict=True))
        if step.pause:
            time.sleep(step.pause)
        for side in sides:  # what one side accepted and another refused is undone where it was accepted
            if 200 <= answers[side.name].status < 300:
                for undo in step.undo:
                    side.send(undo)
        raced = raced or (step.live and any(settled(answer) for answer in answers.values()))
        out.append(Played(step, answers))
    return out, raced


@dataclass
class Shaped:
    """One kept step's comparable forms, by side (and its raw answers, for what a suite tallies)."""

    step: Step
    shapes: dict[str, Any]
    answers: dict[str, Answer]


# How a caller forms an answer itself (verify's view): the step, the answer, the side's normaliser.
View = Callable[[Step, Answer, Normaliser], Any]


def shape(played: Iterable[Played], normalisers: Mapping[str, Normaliser], view: View | None = None) -> list[Shaped]:
    """Each side's form of each answer, in playing order (attempts played again still count for the
    id numbering, as they did live, but are not returned). A step about the server's own figures is
    compared by the shape of its top level; `view`, when given, forms every other answer."""
    out = []
    for item in played:
        shapes = {}
        for name, answer in item.answers.items():
            normalise = normalisers[name]
            if item.step.figures:
                shapes[name] = by_shape(normalise(without_body(answer)), answer, depth=1)
            else:
                shapes[name] = view(item.step, answer, normalise) if view is not None else normalise(answer)
        if item.kept:
            out.append(Shaped(item.step, shapes, item.answers))
    return out
