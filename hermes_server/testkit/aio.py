"""`AsyncControlClient`: the control API of `FixtureClient`, over `httpx.AsyncClient`.

For suites whose own client is async (pytest-asyncio, anyio): the same calls, awaited. Requests
are built and answers read by the same functions as the synchronous client's (client.py), so
the two cannot drift apart.
"""

from __future__ import annotations

import builtins
from collections.abc import Mapping, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any, Literal, Self

import httpx

from hermes_server.testkit.audit import AUDIT, Audit, parse_audit, unclean
from hermes_server.testkit.client import (
    CLOCK,
    FAULTS,
    REQUESTS,
    ClockState,
    Document,
    FaultSpec,
    InstalledFault,
    LoadResult,
    RequestRecord,
    called_or_raise,
    clock_body,
    dialect_name,
    dialect_path,
    faults_body,
    key_leaks,
    load_result,
    parse_clock,
    parse_faults,
    parse_records,
    read_document,
    refusal,
    requests_query,
    state_body,
)


class AsyncFaults:
    """`/_fixture/faults`, awaited."""

    def __init__(self, control: AsyncControlClient) -> None:
        self._control = control

    async def set(self, faults: FaultSpec | Sequence[FaultSpec]) -> builtins.list[InstalledFault]:
        return parse_faults(await self._control.call("PUT", FAULTS, json=faults_body(faults)))

    async def add(self, faults: FaultSpec | Sequence[FaultSpec]) -> builtins.list[InstalledFault]:
        return parse_faults(await self._control.call("POST", FAULTS, json=faults_body(faults)))

    async def clear(self) -> builtins.list[InstalledFault]:
        return parse_faults(await self._control.call("DELETE", FAULTS))

    async def list(self) -> builtins.list[InstalledFault]:
        return parse_faults(await self._control.call("GET", FAULTS))


class AsyncClock:
    """`/_fixture/clock`, awaited."""

    def __init__(self, control: AsyncControlClient) -> None:
        self._control = control

    async def get(self) -> ClockState:
        return parse_clock(await self._control.call("GET", CLOCK))

    async def set(self, now: float | str | datetime, *, step: float | None = None) -> ClockState:
        return parse_clock(await self._control.call("POST", CLOCK, json=clock_body(now=now, step=step)))

    async def advance(self, seconds: float) -> ClockState:
        return parse_clock(await self._control.call("POST", CLOCK, json=clock_body(advance=seconds)))

    async def step(self, seconds: float) -> ClockState:
        return parse_clock(await self._control.call("POST", CLOCK, json=clock_body(step=seconds)))


class AsyncDialectControl:
    """A dialect's control route `/_fixture/<dialect>/sessions/{id}`, awaited."""

    def __init__(self, control: AsyncControlClient, dialect: str) -> None:
        self._control = control
        self.dialect = dialect_name(dialect)

    async def set_session(self, session_id: str, *, status: str | None = None,
                          usage: Mapping[str, Any] | None = None) -> dict[str, Any]:
        return await self._control.call("POST", dialect_path(self.dialect, session_id),
                                        json=state_body(status, usage))


class AsyncControlClient:
    """`FixtureClient`'s calls as coroutines: `await control.reset()`, `await control.faults.set(...)`."""

    def __init__(self, base_url: str, api_key: str | None = None, *, timeout: float = 30.0) -> None:
        self.api_key = api_key
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self._http = httpx.AsyncClient(base_url=base_url.rstrip("/"), headers=headers, timeout=timeout)
        self.faults = AsyncFaults(self)
        self.clock = AsyncClock(self)

    @property
    def base_url(self) -> str:
        return str(self._http.base_url).rstrip("/")

    async def call(self, method: str, path: str, **kwargs: Any) -> dict[str, Any]:
        response = await self._http.request(method, path, **kwargs)
        error = refusal(response, method, path)
        if error is not None:
            raise error
        reply: dict[str, Any] = response.json()
        return reply

    async def reset(self, to: Literal["fixture", "empty"] | None = None) -> LoadResult:
        return load_result(await self.call("POST", "/_fixture/reset", json={"to": to} if to else None))

    async def seed(self, document: Document | str | Path) -> LoadResult:
        body = read_document(document) if isinstance(document, (str, Path)) else dict(document)
        return load_result(await self.call("POST", "/_fixture/seed", json=body))

    def dialect(self, name: str) -> AsyncDialectControl:
        return AsyncDialectControl(self, name)

    async def requests(self, route: str | None = None, *, method: str | None = None, session_id: str | None = None,
                       status: int | None = None, bodies: bool = False) -> list[RequestRecord]:
        query = requests_query(route, method, session_id, status, bodies)
        return parse_records(await self.call("GET", REQUESTS, params=query))

    async def clear_requests(self) -> None:
        await self.call("DELETE", REQUESTS)

    async def assert_called(self, route: str, times: int | None = None, *, method: str | None = None,
                            session_id: str | None = None, status: int | None = None) -> list[RequestRecord]:
        calls = await self.requests(route, method=method, session_id=session_id, status=status)
        seen = await self.requests(route) if (times is None and not calls) or (times is not None and
                                                                              len(calls) != times) else []
        return called_or_raise(route, times, calls, lambda: seen,
                               {"method": method, "session_id": session_id, "status": status})

    async def assert_not_called(self, route: str, *, method: str | None = None, session_id: str | None = None,
                                status: int | None = None) -> None:
        await self.assert_called(route, 0, method=method, session_id=session_id, status=status)

    async def assert_no_key_in_bodies(self, key: str | None = None) -> None:
        secret = key if key is not None else self.api_key
        key_leaks(await self.requests(bodies=True) if secret else [], secret)

    async def audit(self) -> Audit:
        return parse_audit(await self.call("GET", AUDIT))

    async def assert_clean(self) -> Audit:
        audit = await self.audit()
        failure = unclean(audit)
        if failure is not None:
            raise failure
        return audit

    async def aclose(self) -> None:
        await self._http.aclose()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()
