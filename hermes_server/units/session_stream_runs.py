"""0.20's session-stream runs (https://github.com/NousResearch/hermes-agent/pull/85226):
the `run_id` of a session chat stream is a run, whose status
`GET /v1/runs/{run_id}` reads and which stop and steer reach (chat/runs.py `TrackedStreamRun`)."""

from __future__ import annotations

from dataclasses import replace

from hermes_server.chat.runs import StreamRuns
from hermes_server.config import Settings
from hermes_server.context import Behaviour
from hermes_server.openapi.runs_schemas import PARAMETERS, RESPONSES
from hermes_server.units.unit import Unit


def _tracked(behaviour: Behaviour, settings: Settings) -> Behaviour:
    return replace(behaviour, stream_runs=StreamRuns(tracked=True))


UNIT = Unit(
    name="session_stream_runs",
    behaviour=_tracked,
    components={
        "parameters": {
            "run_id": {**PARAMETERS["run_id"], "description": "A run of POST /v1/runs, or a session stream's (the "
                                                              "`run_id` of its `run.started`): its status, stop and "
                                                              "steer reach either."},
        },
        "responses": {
            "RunStatus": {**RESPONSES["RunStatus"], "description": "The status of a submitted run or of a session "
                          "stream's; keys appear in the order they were first set."},
        },
    },
)
