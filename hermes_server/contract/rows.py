"""What explains a difference: the deviations of docs/differences.md (D1-D11) and the release
rows of docs/versions.md, in users' words. The one place a scenario's difference is mapped to a
row, so that a row can be re-pointed (a profile unit renamed, a release added) here alone.

A deviation is named by the step that reaches it (`Step.deviation`). A release row is
recognised by what differs (`Difference`): the route, the status, the JSON keys that differ or
that only one side has. `since` of a row is the first served release that has its profile
unit (`domain/profiles.py`), or the one the row names.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from hermes_server.contract.masks import Keys, parsed_form
from hermes_server.contract.steps import Step
from hermes_server.domain.profiles import PROFILES, Addition


@dataclass(frozen=True)
class Deviation:
    """A row of docs/differences.md: what hermes-server answers where 0.19.0 answers otherwise."""

    row: str
    behaviour: str
    # For a comparison with 0.19.0: true when nothing but this deviation differs between
    # 0.19.0's form `a` and hermes-server's `b` (None: any difference is this deviation).
    only: Callable[[dict[str, Any], dict[str, Any]], bool] | None = None


def _status_500_to_400(a: dict[str, Any], b: dict[str, Any]) -> bool:
    return a["status"] == 500 and b["status"] == 400 and {**a, "status": 400} == b


CONTENT_PART_EVENTS = ("response.content_part.added", "response.content_part.done")


def _content_parts_only(a: dict[str, Any], b: dict[str, Any]) -> bool:
    """b is a with D10's events added (their sequence numbers are masked, so nothing shifts)."""
    return a == {**b, "events": [event for event in b.get("events", []) if event[0] not in CONTENT_PART_EVENTS]}


DEVIATIONS: dict[str, Deviation] = {d.row: d for d in (
    Deviation("D1", "a create title over 100 characters: 400 invalid_title, no row (0.19.0: 500 text/plain)"),
    Deviation("D2", "/messages of a forked session: the session's own transcript (0.19.0 follows the newest "
                    "untagged child, so a fork takes over its source)"),
    Deviation("D3", "a create id holding a control character other than CR, LF, NUL: 400 invalid_session_id "
                    "(0.19.0 accepts it)"),
    Deviation("D4", "a chunked body over 10,000,000 bytes: 413 body_too_large (0.19.0: 400 Invalid JSON)"),
    Deviation("D5", "a bearer that is not UTF-8: 401; an agent exception during /chat: the 500 envelope "
                    "(0.19.0: 500 text/plain)"),
    Deviation("D6", "other input 0.19.0 answers with a bare 500 (lone surrogates, bodies or items that are not "
                    "objects): 400 naming the field"),
    Deviation("D7", "a write the storage refuses (disk full, read-only file, I/O error): 503 "
                    "session_db_unavailable, nothing written (0.19.0: 500 text/plain)"),
    Deviation("D8", "cron jobs bad input: 400 with 0.19.0's body (0.19.0: 500)", _status_500_to_400),
    Deviation("D9", "the history the Responses API stores for chaining: each message once (0.19.0 repeats "
                    "them: the model of a chain's third turn sees 7 messages)"),
    Deviation("D10", "a streamed Responses turn: response.content_part.added/.done around the text (0.19.0 "
                     "sends neither)", _content_parts_only),
    Deviation("D11", "a request head past a limit (target or header value over 8190 bytes, more than 128 "
                     "headers): 400 with the envelope naming the limit (0.19.0: 400 text/plain quoting the head)"),
)}


@dataclass(frozen=True)
class Difference:
    """How two normalised answers of one step differ."""

    statuses: tuple[Any, Any]
    paths: frozenset[tuple[Any, ...]]  # where the two forms differ (dict keys and list positions)
    keys: frozenset[str]  # JSON keys only one of the two forms has, anywhere

    @classmethod
    def of(cls, a: Any, b: Any) -> Difference:
        a, b = parsed_form(a), parsed_form(b)
        paths: set[tuple[Any, ...]] = set()
        _diff(a, b, (), paths)
        statuses = (a.get("status"), b.get("status")) if isinstance(a, dict) and isinstance(b, dict) else (None, None)
        return cls(statuses, frozenset(paths), frozenset(_keys(a) ^ _keys(b)))

    def touches(self, *names: str) -> bool:
        """Whether one of these JSON keys differs, or only one side has it."""
        return any(name in self.keys or any(name in path for path in self.paths) for name in names)


def _diff(a: Any, b: Any, at: tuple[Any, ...], out: set[tuple[Any, ...]]) -> None:
    if isinstance(a, dict) and isinstance(b, dict):
        for key in a.keys() | b.keys():
            _diff(a.get(key), b.get(key), (*at, key), out)
    elif isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)) and len(a) == len(b):
        for k, (x, y) in enumerate(zip(a, b, strict=True)):
            _diff(x, y, (*at, k), out)
    elif a != b:
        out.add(at)


def _keys(form: Any) -> set[str]:
    if isinstance(form, Keys):
        return set(form)
    if isinstance(form, dict):
        return {str(k) for k in form} | {k for v in form.values() for k in _keys(v)}
    if isinstance(form, (list, tuple, frozenset)):
        return {k for v in form for k in _keys(v)}
    return set()


@dataclass(frozen=True)
class ReleaseRow:
    """A row of docs/versions.md (its behaviour column), the profile unit that carries it, and how a
    difference shows it."""

    behaviour: str
    unit: Addition | None
    shows: Callable[[Step, Difference], bool]
    named_since: str | None = None  # for a row no unit carries: the first release that differs

    @property
    def since(self) -> str | None:
        if self.unit is None:
            return self.named_since
        return next((version for version, profile in PROFILES.items() if self.unit in profile.units), None)


def _route(step: Step) -> str:
    """A step's path without its query."""
    return step.path.split("?")[0]


def _path(*suffixes: str) -> Callable[[Step, Difference], bool]:
    return lambda step, diff: _route(step).endswith(suffixes)


HEALTH = ("/health", "/v1/health", "/health/detailed")
UNSERVED_0_21 = ("/v1/browser-control/register", "/v1/browser-control/ws", "/v1/artifacts/upload",
                 "/v1/artifacts/download", "/v1/room-members/invitations", "/v1/room-members/capabilities",
                 "/v1/room-members/grants/refresh", "/v1/room-members/grants/revoke")

RELEASE_ROWS: tuple[ReleaseRow, ...] = (
    ReleaseRow("`/health`, `/v1/health`, `/health/detailed` `version`", None,
               lambda step, diff: _route(step) in HEALTH and diff.touches("version"), named_since="0.20.4"),
    ReleaseRow("401 on a missing or wrong key", Addition.GATEWAY_AUTH,
               lambda step, diff: 401 in diff.statuses and diff.touches("error", "code", "type", "param", "message")),
    ReleaseRow("`/v1/capabilities` `features` order and names", None,
               lambda step, diff: _route(step).endswith("/v1/capabilities") and diff.touches("features"),
               named_since="0.20.4"),
    ReleaseRow("`/v1/capabilities` `endpoints` order", None,
               lambda step, diff: _route(step).endswith("/v1/capabilities") and diff.touches("endpoints"),
               named_since="0.20.4"),
    ReleaseRow("`POST /v1/runs/{run_id}/steer`", Addition.RUN_STEER, _path("/steer")),
    ReleaseRow("`POST /v1/runs/{id}/stop` on a finished run", Addition.RUN_STOP_SETTLED,
               lambda step, diff: _route(step).endswith("/stop") and diff.statuses[0] != diff.statuses[1]),
    ReleaseRow("`POST /v1/runs` 202 answer", Addition.RUN_IDEMPOTENCY,
               lambda step, diff: step.method == "POST" and _route(step) == "/v1/runs" and diff.touches("replayed")),
    ReleaseRow("`pending_steer`", Addition.RUN_STEER, lambda step, diff: diff.touches("pending_steer")),
    ReleaseRow("browser-control, artifact and room-member routes (8)", Addition.UNSERVED_0_21,
               lambda step, diff: _route(step).startswith(UNSERVED_0_21)),
    ReleaseRow("`GET /api/model/options`", Addition.MODEL_OPTIONS, _path("/api/model/options")),
    ReleaseRow("`POST /api/sessions/{id}/model`", Addition.SESSION_MODEL_LOCK,
               lambda step, diff: step.method == "POST" and _route(step).endswith("/model")),
    ReleaseRow("`GET /api/sessions/{id}/messages` paging", Addition.MESSAGE_PAGING,
               lambda step, diff: diff.touches("pagination")),
    ReleaseRow("`POST /api/sessions` `source`", Addition.CREATE_FIELDS,
               lambda step, diff: any(path[-2:] == ("session", "source") for path in diff.paths)),
    ReleaseRow("`POST /api/sessions` `model`", Addition.CREATE_FIELDS,
               lambda step, diff: any(path[-2:] == ("session", "model") for path in diff.paths)),
    ReleaseRow("`runtime` on session chat (`/chat` answer after `usage`; `run.started`, `assistant.completed`, "
               "`run.completed` on `/chat/stream`)", Addition.CHAT_RUNTIME, lambda step, diff: diff.touches("runtime")),
    ReleaseRow("session object `pinned`, `archived`, `hidden`", Addition.SESSION_FLAGS,
               lambda step, diff: diff.touches("pinned", "archived", "hidden")),
    ReleaseRow("`runs_idempotency` capability", Addition.RUN_IDEMPOTENCY,
               lambda step, diff: diff.touches("runs_idempotency")),
    ReleaseRow("`run_steer` flag and endpoint", Addition.RUN_STEER,
               lambda step, diff: _route(step).endswith("/v1/capabilities") and diff.touches("run_steer")),
    ReleaseRow("`model_options`, `session_model_lock` flags and endpoints", Addition.MODEL_OPTIONS,
               lambda step, diff: _route(step).endswith("/v1/capabilities")
               and diff.touches("model_options", "session_model_lock")),
)


def release_rows(step: Step, difference: Difference) -> list[ReleaseRow]:
    """The rows of docs/versions.md this difference shows."""
    return [row for row in RELEASE_ROWS if row.shows(step, difference)]
