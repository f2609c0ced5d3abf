"""D9 under `--upstream-quirks`: a chained Responses request continues from what 0.19.0 stores after a
turn, duplicates included (docs/differences.md; domain/response_history.py)."""

from __future__ import annotations

from dataclasses import replace

from hermes_server.config import Settings
from hermes_server.context import Behaviour
from hermes_server.domain.response_history import upstream_stored_history
from hermes_server.units.unit import Unit


def _duplicated(behaviour: Behaviour, settings: Settings) -> Behaviour:
    return replace(behaviour, history_after_turn=upstream_stored_history)


UNIT = Unit(name="upstream D9", behaviour=_duplicated)
