"""Each fault kind owns its effect, and the hooks ask the kinds at one point, for the current request.

The core asks `ctx.hooks.at(point, …)` and does what the answer says; which request asks is
the one the fault layer made current (testing/request_context.py), never a scope passed down.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest

from hermes_server.app import build_routes
from hermes_server.chat.hooks import CARRY_ON, NO_HOOKS, Point
from hermes_server.domain.errors import DatabaseUnavailable
from hermes_server.http.errors import InjectedStatus
from hermes_server.testing.fault_kinds import KINDS
from hermes_server.testing.fault_layer import FaultHooks
from hermes_server.testing.faults import FaultRegistry
from hermes_server.testing.request_context import RequestContext, current, serving
from hermes_server.testing.transport import InjectedDisconnect

# A hook kind's smallest valid document (beyond `kind`), to build one fault of each.
MINIMAL: dict[str, dict[str, Any]] = {
    "fork_interrupted": {"after_step": 2}, "fork_paused": {"after_step": 2, "latency_ms": 30},
    "history_load_failure": {}, "persistence_failure": {}, "stream_cut": {"after_events": 1},
}


def registry(*faults: dict[str, Any]) -> FaultRegistry:
    installed = FaultRegistry(build_routes())
    installed.replace(installed.parse({"faults": list(faults)}))
    return installed


def test_every_kind_acting_inside_a_use_case_names_its_point_and_its_effect() -> None:
    hook_kinds = [kind for kind in KINDS.values() if not kind.around]
    assert {kind.name for kind in hook_kinds} == set(MINIMAL)
    for kind in hook_kinds:
        (fault,) = registry({"kind": kind.name, **MINIMAL[kind.name]}).faults
        assert kind.point is not None
        assert kind.action(fault, RequestContext("session_fork", "POST", "s")) is not CARRY_ON, kind.name


def test_outside_a_request_nothing_happens() -> None:
    hooks = FaultHooks(registry({"kind": "history_load_failure", "times": "always"}))
    assert current() is None and hooks.at(Point.HISTORY_LOAD) is CARRY_ON
    assert NO_HOOKS.at(Point.FORK_STEP, step=1) is CARRY_ON


def test_a_turn_fault_fails_the_step_once_per_request() -> None:
    hooks = FaultHooks(registry({"kind": "persistence_failure", "route": "session_chat", "times": 1}))

    async def twice(request: RequestContext) -> list[str]:
        outcomes = []
        with serving(request):
            for _ in range(2):  # a turn's two writes ask; the answer is the same
                try:
                    await hooks.at(Point.PERSIST).happen()
                    outcomes.append("stored")
                except DatabaseUnavailable:
                    outcomes.append("refused")
        return outcomes

    first = RequestContext("session_chat", "POST", "s")
    assert asyncio.run(twice(first)) == ["refused", "refused"] and first.fired == ["f1"]
    assert asyncio.run(twice(RequestContext("session_chat", "POST", "s"))) == ["stored", "stored"]


@pytest.mark.parametrize("status, raised", [(None, InjectedDisconnect), (409, InjectedStatus)])
def test_at_a_fork_step_a_pause_acts_before_an_interruption(status: int | None, raised: type[Exception]) -> None:
    interrupt = {"kind": "fork_interrupted", "after_step": 2, **({"status": status} if status else {})}
    hooks = FaultHooks(registry(interrupt, {"kind": "fork_paused", "after_step": 2, "latency_ms": 50}))
    request = RequestContext("session_fork", "POST", "s")

    async def fork() -> float:
        with serving(request):
            await hooks.at(Point.FORK_STEP, step=1).happen()  # another step: nothing
            began = time.monotonic()
            with pytest.raises(raised):
                await hooks.at(Point.FORK_STEP, step=2).happen()
            return time.monotonic() - began

    assert asyncio.run(fork()) >= 0.045
    assert request.fired == ["f2", "f1"]  # the pause, then the interruption
