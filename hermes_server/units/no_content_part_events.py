"""D10 under `--upstream-quirks`: a Responses stream sends 0.19.0's events only, without
`response.content_part.added`/`.done` around the message's text and without naming each call of its
`response.completed` by id (docs/differences.md; chat/response_stream.py)."""

from __future__ import annotations

from dataclasses import replace

from hermes_server.config import Settings
from hermes_server.context import Behaviour
from hermes_server.units.unit import Unit


def _upstream_events(behaviour: Behaviour, settings: Settings) -> Behaviour:
    return replace(behaviour, upstream_response_events=True)


UNIT = Unit(name="upstream D10", behaviour=_upstream_events)
