"""A typed client for a hermes-server's `/_fixture/` control API, and assertions over its journal.

Usable without pytest: point it at any server started with `--fixture-api` and its key.
It talks HTTP only (httpx) and imports nothing of the server, so a connector's test suite
can drive a server in a container or on another machine with the same calls.
"""

from __future__ import annotations

import builtins
import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any, Literal, Self
from urllib.parse import quote

import httpx

from hermes_server.testkit.audit import AUDIT, Audit, parse_audit, unclean

FaultSpec = Mapping[str, Any]  # a fault object; `Fault.status(...)` and the other builders make one
Document = Mapping[str, Any]
Outcome = Literal["response", "connection_reset", "no_response"]


class FixtureError(Exception):
    """The control API refused a call: the status and the server's error envelope.

    `status` is None for a `FixtureDocumentError`, which no server answered."""

    def __init__(self, status: int | None, message: str, code: str | None = None, param: str | None = None) -> None:
        head = f"{status} {code or 'error'}: " if status is not None else ""
        # The server's message names the JSON path of each problem already: say it once.
        super().__init__(head + message + (f" (at {param})" if param and param not in message else ""))
        self.status = status
        self.message = message
        self.code = code
        self.param = param


class FixtureDocumentError(FixtureError):
    """A fixture file could not be read as a document (before any server saw it)."""

    def __init__(self, message: str) -> None:
        super().__init__(None, message)


@dataclass(frozen=True)
class LoadResult:
    """What a reset or seed wrote, and what state.db holds afterwards."""

    sessions_written: int
    messages_written: int
    sessions_total: int
    messages_total: int
    to: str | None = None  # reset only: "fixture" or "empty"
    # Every other part's counts the server reported, by part name (a dialect's store, say).
    parts: Mapping[str, Mapping[str, int]] = field(default_factory=dict)


@dataclass(frozen=True)
class InstalledFault:
    """A fault as the server holds it: its spec, how often it fired, how often it still will."""

    id: str
    kind: str
    fired: int
    remaining: int | None  # None: "always"
    spec: dict[str, Any]


@dataclass(frozen=True)
class RequestRecord:
    """One journal entry: a request a client sent and what it got back."""

    seq: int
    time: float
    method: str
    route: str | None  # None: the path matched no route
    template: str | None
    path: str
    query: str
    status: int | None  # None: the connection was reset or nothing was answered
    outcome: Outcome
    duration_ms: float
    session_ids: list[str]
    faults: list[str]
    request_body: Any
    response_body: Any
    # What the audit reads of an entry (fields a server before the audit does not send):
    clock: float | None = None  # the server's settable clock when the request arrived
    credential: bool = False  # whether it carried a credential header
    idempotency_key: bool = False
    answered_session_id: str | None = None  # the session id the answer named
    retry_after: str | None = None  # the answer's Retry-After

    def describe(self, *, query: bool = True) -> str:
        """One line for assertion messages (never a body: bodies carry transcript text)."""
        shown = f"?{self.query}" if self.query and query else ""
        status = self.status if self.status is not None else self.outcome
        return f"#{self.seq} {self.method} {self.path}{shown} -> {status}"


@dataclass(frozen=True)
class ClockState:
    """The server's clock: `manual` once set (or in deterministic mode), else the wall clock."""

    now: float
    step: float | None
    manual: bool
    deterministic: bool


def _time_value(value: float | str | datetime) -> float | str:
    """Unix seconds, an ISO-8601 string (as the server accepts), or a datetime (naive = UTC)."""
    if isinstance(value, datetime):
        return value.timestamp() if value.tzinfo else value.isoformat() + "Z"
    return value


def read_document(path: str | Path) -> dict[str, Any]:
    """A fixture file as a JSON object: JSON, or YAML (.yaml/.yml) when PyYAML is installed.

    The server has its own reader (for `serve --fixture` and `hermes-server seed`) on purpose:
    the kit imports nothing of the server, so a connector's suite can drive one anywhere."""
    path = Path(path)
    text = path.read_text(encoding="utf-8")
    if path.suffix.lower() in (".yaml", ".yml"):
        try:
            import yaml
        except ImportError:
            raise FixtureDocumentError(f"{path}: YAML fixtures need PyYAML (pip install PyYAML, or the [yaml] extra)") from None
        document = yaml.safe_load(text)
    else:
        document = json.loads(text)
    if not isinstance(document, dict):
        raise FixtureDocumentError(f"{path}: a fixture is an object, not {type(document).__name__}")
    return document


# -- what the sync and the async client share: how a call is made and how its answer is read --

FAULTS = "/_fixture/faults"
CLOCK = "/_fixture/clock"
REQUESTS = "/_fixture/requests"


def refusal(response: httpx.Response, method: str, path: str) -> FixtureError | None:
    """The FixtureError an answer stands for, or None for a success."""
    if response.status_code < 400:
        return None
    try:
        error = response.json()["error"]
        return FixtureError(response.status_code, error["message"], error.get("code"), error.get("param"))
    except (ValueError, KeyError, TypeError):
        hint = " (was the server started with --fixture-api?)" if response.status_code == 404 else ""
        return FixtureError(response.status_code, f"{method} {path}: {response.text[:200]}{hint}")


def faults_body(faults: FaultSpec | Sequence[FaultSpec]) -> dict[str, Any]:
    return dict(faults) if isinstance(faults, Mapping) else {"faults": [dict(f) for f in faults]}


def parse_faults(reply: dict[str, Any]) -> list[InstalledFault]:
    out = []
    for item in reply["data"]:
        spec = {k: v for k, v in item.items() if k not in ("fired", "remaining")}
        out.append(InstalledFault(item.get("id", ""), item.get("kind", ""), item["fired"], item["remaining"], spec))
    return out


def clock_body(**fields: Any) -> dict[str, Any]:
    if "now" in fields and fields["now"] is not None:
        fields["now"] = _time_value(fields["now"])
    return {k: v for k, v in fields.items() if v is not None}


def parse_clock(reply: dict[str, Any]) -> ClockState:
    return ClockState(reply["now"], reply["step"], reply["manual"], reply["deterministic"])


def load_result(reply: dict[str, Any]) -> LoadResult:
    """The state.db counts, and each other part's counts (any object in the answer) under its name."""
    parts = {name: dict(value) for name, value in reply.items() if isinstance(value, dict)}
    return LoadResult(reply["sessions_written"], reply["messages_written"], reply["sessions_total"],
                      reply["messages_total"], reply.get("to"), parts)


def requests_query(route: str | None, method: str | None, session_id: str | None, status: int | None,
                   bodies: bool) -> dict[str, str]:
    query = {"route": route, "method": method, "session_id": session_id,
             "status": None if status is None else str(status), "bodies": "true" if bodies else None}
    return {k: v for k, v in query.items() if v is not None}


_RECORD_FIELDS = frozenset(RequestRecord.__dataclass_fields__)


def parse_records(reply: dict[str, Any]) -> list[RequestRecord]:
    """The journal's entries; a field this kit does not know (a newer server's) is left out."""
    return [RequestRecord(**{k: v for k, v in entry.items() if k in _RECORD_FIELDS}) for entry in reply["data"]]


def called_or_raise(route: str, times: int | None, calls: list[RequestRecord], seen: Callable[[], list[RequestRecord]],
                    filters: Mapping[str, Any]) -> list[RequestRecord]:
    """`calls` when they are what was expected, else an AssertionError listing every call of `route`."""
    if (times is None and calls) or len(calls) == times:
        return calls
    given = ", ".join(f"{k}={v!r}" for k, v in filters.items() if v is not None)
    wanted = "at least once" if times is None else f"{times} time{'s' if times != 1 else ''}"
    lines = "\n".join(f"  {r.describe()}" for r in seen()) or "  (none)"
    raise AssertionError(f"expected {route}{f' ({given})' if given else ''} to be called {wanted}, "
                         f"it was called {len(calls)} time{'s' if len(calls) != 1 else ''}; "
                         f"every {route} call in the journal:\n{lines}")


def key_leaks(records: list[RequestRecord], secret: str | None) -> None:
    """Raise when a recorded request carried `secret` in its body or query (never printing it)."""
    if not secret:
        raise ValueError("no key to look for: pass key= or give the client an api_key")
    leaks = [r for r in records if secret in r.query or secret in _text(r.request_body)]
    if leaks:
        lines = "\n".join(f"  {r.describe(query=False)}" for r in leaks)
        raise AssertionError(f"{len(leaks)} request(s) carried the key in the body or query:\n{lines}")


def dialect_name(dialect: str) -> str:
    """A dialect's name as its control routes spell it (`/_fixture/<name>/...`): one path segment."""
    if not dialect or quote(dialect, safe="") != dialect:
        raise ValueError(f"a dialect is named by one plain path segment, not {dialect!r}")
    return dialect


def dialect_path(dialect: str, session_id: str) -> str:
    return f"/_fixture/{dialect}/sessions/{quote(session_id, safe='')}"


def state_body(status: str | None, usage: Mapping[str, Any] | None) -> dict[str, Any]:
    return {k: v for k, v in (("status", status), ("usage", dict(usage) if usage is not None else None))
            if v is not None}


def _text(body: Any) -> str:
    """A journal body as searchable text (JSON re-encoded without escaping non-ASCII)."""
    if body is None:
        return ""
    if isinstance(body, str):
        return body
    return json.dumps(body, ensure_ascii=False)


# -- the synchronous client -----------------------------------------------------


class Faults:
    """`/_fixture/faults`: replace, add to, clear and list the installed faults.

    (`list` is a method here, so annotations spell the type `builtins.list`.)
    """

    def __init__(self, control: FixtureClient) -> None:
        self._control = control

    def set(self, faults: FaultSpec | Sequence[FaultSpec]) -> builtins.list[InstalledFault]:
        """Replace every installed fault with these (one fault object or a list)."""
        return parse_faults(self._control.call("PUT", FAULTS, json=faults_body(faults)))

    def add(self, faults: FaultSpec | Sequence[FaultSpec]) -> builtins.list[InstalledFault]:
        """Install these beside the ones already there."""
        return parse_faults(self._control.call("POST", FAULTS, json=faults_body(faults)))

    def clear(self) -> builtins.list[InstalledFault]:
        return parse_faults(self._control.call("DELETE", FAULTS))

    def list(self) -> builtins.list[InstalledFault]:
        return parse_faults(self._control.call("GET", FAULTS))


class Clock:
    """`/_fixture/clock`: read it, or set, advance or step it (which makes it manual)."""

    def __init__(self, control: FixtureClient) -> None:
        self._control = control

    def get(self) -> ClockState:
        return parse_clock(self._control.call("GET", CLOCK))

    def set(self, now: float | str | datetime, *, step: float | None = None) -> ClockState:
        """Put the clock at `now` (Unix seconds, ISO-8601, or a datetime)."""
        return parse_clock(self._control.call("POST", CLOCK, json=clock_body(now=now, step=step)))

    def advance(self, seconds: float) -> ClockState:
        return parse_clock(self._control.call("POST", CLOCK, json=clock_body(advance=seconds)))

    def step(self, seconds: float) -> ClockState:
        """How far the manual clock moves on each reading (0: it stands still)."""
        return parse_clock(self._control.call("POST", CLOCK, json=clock_body(step=seconds)))


class DialectControl:
    """A dialect's own control route, `/_fixture/<dialect>/sessions/{id}` (docs/pytest.md names them)."""

    def __init__(self, control: FixtureClient, dialect: str) -> None:
        self._control = control
        self.dialect = dialect_name(dialect)

    def set_session(self, session_id: str, *, status: str | None = None,
                    usage: Mapping[str, Any] | None = None) -> dict[str, Any]:
        """Give one of the dialect's sessions a status and/or a usage snapshot; returns the session."""
        return self._control.call("POST", dialect_path(self.dialect, session_id), json=state_body(status, usage))


class FixtureClient:
    """The control API of one server: `reset`, `seed`, `faults`, `requests`, `clock`, and assertions."""

    def __init__(self, base_url: str, api_key: str | None = None, *, timeout: float = 30.0) -> None:
        self.api_key = api_key
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        # Reset waits (up to 10 s) for chat turns still running, so the timeout must exceed that.
        self._http = httpx.Client(base_url=base_url.rstrip("/"), headers=headers, timeout=timeout)
        self.faults = Faults(self)
        self.clock = Clock(self)

    @property
    def base_url(self) -> str:
        return str(self._http.base_url).rstrip("/")

    def call(self, method: str, path: str, **kwargs: Any) -> dict[str, Any]:
        """One control call; a refusal raises FixtureError with the server's message."""
        response = self._http.request(method, path, **kwargs)
        error = refusal(response, method, path)
        if error is not None:
            raise error
        reply: dict[str, Any] = response.json()
        return reply

    def reset(self, to: Literal["fixture", "empty"] | None = None) -> LoadResult:
        """Back to the start fixture (default when the server has one) or to empty; also clears
        faults and the journal, and in deterministic mode rewinds the clock and ids."""
        return load_result(self.call("POST", "/_fixture/reset", json={"to": to} if to else None))

    def seed(self, document: Document | str | Path) -> LoadResult:
        """Merge a fixture (an object, or a JSON/YAML file path) into state.db, all or nothing."""
        body = read_document(document) if isinstance(document, (str, Path)) else dict(document)
        return load_result(self.call("POST", "/_fixture/seed", json=body))

    def dialect(self, name: str) -> DialectControl:
        """The control route of the dialect served under `/_fixture/<name>/` (one with a flag of its own)."""
        return DialectControl(self, name)

    def requests(self, route: str | None = None, *, method: str | None = None, session_id: str | None = None,
                 status: int | None = None, bodies: bool = False) -> list[RequestRecord]:
        """The journal, oldest first, filtered on every given field. `route` is an operation name
        (`session_get`), a route name (`session`) or a template (`/api/sessions/{session_id}`)."""
        query = requests_query(route, method, session_id, status, bodies)
        return parse_records(self.call("GET", REQUESTS, params=query))

    def clear_requests(self) -> None:
        self.call("DELETE", REQUESTS)

    def assert_called(self, route: str, times: int | None = None, *, method: str | None = None,
                      session_id: str | None = None, status: int | None = None) -> list[RequestRecord]:
        """That `route` was called (exactly `times` times when given) with these filters; returns the calls."""
        calls = self.requests(route, method=method, session_id=session_id, status=status)
        return called_or_raise(route, times, calls, lambda: self.requests(route),
                               {"method": method, "session_id": session_id, "status": status})

    def assert_not_called(self, route: str, *, method: str | None = None, session_id: str | None = None,
                          status: int | None = None) -> None:
        self.assert_called(route, 0, method=method, session_id=session_id, status=status)

    def assert_no_key_in_bodies(self, key: str | None = None) -> None:
        """That no recorded request carried `key` (default: this client's key) in its body or query
        string. The journal keeps the first 32 KiB of each body; the key itself is never printed."""
        secret = key if key is not None else self.api_key
        key_leaks(self.requests(bodies=True) if secret else [], secret)

    def audit(self) -> Audit:
        """The server's audit of the journal since the last reset: `checked`, and the findings."""
        return parse_audit(self.call("GET", AUDIT))

    def assert_clean(self) -> Audit:
        """That the audit has no error finding (warnings pass); else an AssertionError listing them all."""
        audit = self.audit()
        failure = unclean(audit)
        if failure is not None:
            raise failure
        return audit

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
