"""0.21.4's shutdown of runs (https://github.com/NousResearch/hermes-agent/pull/114774): when the server
begins to shut down, every live `/v1/runs` run is settled `interrupted` (`error: "Gateway shutdown
interrupted the run."`, `last_event: run.interrupted`), in memory and in runs_idempotency.db, before
its turn is interrupted; a run admitted but not started settles at once, and no late result
(success, failure, cancellation) overwrites it. A client's stop still goes `stopping` → `cancelled`
(chat/runs.py `interrupt_for_shutdown`, chat/run_task.py)."""

from __future__ import annotations

from dataclasses import replace

from hermes_server.chat.runs import Runs
from hermes_server.config import Settings
from hermes_server.context import Behaviour
from hermes_server.units.unit import Unit


def _interrupting(behaviour: Behaviour, settings: Settings) -> Behaviour:
    return replace(behaviour, at_shutdown=Runs.interrupt_for_shutdown)


UNIT = Unit(name="shutdown_interrupts_runs", behaviour=_interrupting)
