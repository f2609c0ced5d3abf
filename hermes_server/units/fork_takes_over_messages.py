"""D2 under `--upstream-quirks`: `GET /api/sessions/{id}/messages` of a compression parent that was
forked reads the fork's transcript, as 0.19.0's tip resolution does (docs/differences.md)."""

from __future__ import annotations

from dataclasses import replace

from hermes_server.config import Settings
from hermes_server.context import Behaviour
from hermes_server.units.unit import Unit


def _taken_over(behaviour: Behaviour, settings: Settings) -> Behaviour:
    return replace(behaviour, fork_takes_over_messages=True)


UNIT = Unit(name="upstream D2", behaviour=_taken_over)
