"""0.21.4's session-stream output (https://github.com/NousResearch/hermes-agent/pull/112305): the
`completed` status of a session chat stream's run holds the reply as `output`, as a `/v1/runs`
run's always did, so a client that lost the stream reads the reply from `GET /v1/runs/{run_id}`.
`failed` and `cancelled` carry no `output`."""

from __future__ import annotations

from dataclasses import replace

from hermes_server.config import Settings
from hermes_server.context import Behaviour
from hermes_server.units.unit import Unit


def _kept(behaviour: Behaviour, settings: Settings) -> Behaviour:
    return replace(behaviour, stream_runs=replace(behaviour.stream_runs, keeps_output=True))


UNIT = Unit(name="session_stream_output", behaviour=_kept)
