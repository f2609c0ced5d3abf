"""Typed builders for the fault objects `PUT /_fixture/faults` accepts (docs/fixtures.md, "Faults").

`Fault.status("session_get", 503, times=1)` is the dict `{"kind": "status", "route": "session_get",
"status": 503, "times": 1}` and can be passed wherever a fault dict is (`control.faults.set`,
`@pytest.mark.hermes_faults`): a `Fault` is a read-only mapping of exactly the fields given, so
the server applies its own defaults to the rest, as it does for a hand-written dict. One builder
per fault kind the server accepts; the server still validates every value.
"""

from __future__ import annotations

import difflib
import inspect
from collections.abc import Iterator, Mapping
from typing import Any, Literal

When = Literal["before", "after"]
Times = int | Literal["always"]


class Fault(Mapping[str, Any]):
    """One fault object; build it with a class method named after its kind."""

    __slots__ = ("_spec",)

    def __init__(self, kind: str, route: str | None, fields: Mapping[str, Any], common: Mapping[str, Any]) -> None:
        spec: dict[str, Any] = {"kind": kind}
        if route is not None:
            spec["route"] = route
        spec.update((k, v) for k, v in {**fields, **common}.items() if v is not None)
        self._spec = spec

    def __getitem__(self, key: str) -> Any:
        return self._spec[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._spec)

    def __len__(self) -> int:
        return len(self._spec)

    def __repr__(self) -> str:
        return f"Fault({self._spec!r})"

    def as_json(self) -> dict[str, Any]:
        return dict(self._spec)

    # -- around the handler --------------------------------------------------

    @classmethod
    def status(cls, route: str | None = None, status: int = 503, *, message: str | None = None, code: str | None = None,
               type: str | None = None, param: str | None = None, headers: Mapping[str, str] | None = None,
               retry_after: int | None = None, when: When | None = None, **common: Any) -> Fault:
        """An error envelope instead of (`when="before"`) or after (`"after"`) the handler's answer.
        A 429 or 503 says `Retry-After: 1` unless `retry_after` (whole seconds) or `headers` say otherwise."""
        return cls("status", route, {"status": status, "message": message, "code": code, "type": type,
                                     "param": param, "headers": dict(headers) if headers is not None else None,
                                     "retry_after": retry_after, "when": when}, _common("status", common))

    @classmethod
    def latency(cls, route: str | None, latency_ms: int, *, when: When | None = None, **common: Any) -> Fault:
        return cls("latency", route, {"latency_ms": latency_ms, "when": when}, _common("latency", common))

    @classmethod
    def connection_reset(cls, route: str | None = None, *, when: When | None = None, **common: Any) -> Fault:
        return cls("connection_reset", route, {"when": when}, _common("connection_reset", common))

    # -- storage ---------------------------------------------------------------

    @classmethod
    def storage_unavailable(cls, duration_ms: int, *, route: str | None = None, **common: Any) -> Fault:
        """state.db unopenable for `duration_ms` from the matching request on."""
        return cls("storage_unavailable", route, {"duration_ms": duration_ms}, _common("storage_unavailable", common))

    @classmethod
    def disk_full(cls, route: str | None = None, *, duration_ms: int | None = None, **common: Any) -> Fault:
        return cls("disk_full", route, {"duration_ms": duration_ms}, _common("disk_full", common))

    @classmethod
    def read_only(cls, route: str | None = None, *, duration_ms: int | None = None, **common: Any) -> Fault:
        return cls("read_only", route, {"duration_ms": duration_ms}, _common("read_only", common))

    @classmethod
    def io_error(cls, route: str | None = None, *, duration_ms: int | None = None, **common: Any) -> Fault:
        return cls("io_error", route, {"duration_ms": duration_ms}, _common("io_error", common))

    # -- inside use cases --------------------------------------------------------

    @classmethod
    def fork_interrupted(cls, after_step: int, *, status: int | None = None, message: str | None = None,
                         code: str | None = None, type: str | None = None, param: str | None = None,
                         headers: Mapping[str, str] | None = None, retry_after: int | None = None,
                         route: str | None = None, **common: Any) -> Fault:
        """Fork stops after its write number `after_step` (1-4): a reset connection, or `status`'s envelope
        (its fields as `Fault.status` takes them)."""
        return cls("fork_interrupted", route, {"after_step": after_step, "status": status, "message": message,
                                               "code": code, "type": type, "param": param,
                                               "headers": dict(headers) if headers is not None else None,
                                               "retry_after": retry_after}, _common("fork_interrupted", common))

    @classmethod
    def fork_paused(cls, after_step: int, latency_ms: int, *, route: str | None = None,
                    **common: Any) -> Fault:
        return cls("fork_paused", route, {"after_step": after_step, "latency_ms": latency_ms}, _common("fork_paused", common))

    @classmethod
    def history_load_failure(cls, route: str | None = None, **common: Any) -> Fault:
        """The chat turn runs with an empty history (route: `session_chat`, `session_chat_stream`, or both)."""
        return cls("history_load_failure", route, {}, _common("history_load_failure", common))

    @classmethod
    def persistence_failure(cls, route: str | None = None, **common: Any) -> Fault:
        return cls("persistence_failure", route, {}, _common("persistence_failure", common))

    @classmethod
    def stream_cut(cls, route: str | None = None, after_events: int = 0, **common: Any) -> Fault:
        """The first `after_events` SSE events, then a reset connection (the turn is still stored)."""
        return cls("stream_cut", route, {"after_events": after_events}, _common("stream_cut", common))


# The fields every kind takes, beside its own.
COMMON_FIELDS = ("id", "description", "method", "session_id", "times", "probability", "seed")


def _common(builder: str, common: Mapping[str, Any]) -> dict[str, Any]:
    """The fields every kind takes. A keyword that is neither one of them nor the builder's own is a
    TypeError here (not a 400 later) naming the builder, the keyword, the closest valid one, and all."""
    unknown = [name for name in common if name not in COMMON_FIELDS]
    if unknown:
        own = [name for name in inspect.signature(getattr(Fault, builder)).parameters if name != "common"]
        valid = own + list(COMMON_FIELDS)
        hints = "".join(f" (did you mean {close[0]!r}?)" for name in unknown[:1]
                        if (close := difflib.get_close_matches(name, valid, n=1, cutoff=0.6)))
        raise TypeError(f"Fault.{builder}() has no field {', '.join(map(repr, unknown))}{hints}; "
                        f"its fields: {', '.join(valid)}")
    return {name: common.get(name) for name in COMMON_FIELDS}
