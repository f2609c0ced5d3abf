"""D6 under `--upstream-quirks`: input 0.19.0 crashes on gets its bare 500 (the `SWAPS` rows of
api/deviations.py), and a Responses instruction that is not text reaches the turn, failing it as
0.19.0's agent fails (domain/response_input.py)."""

from __future__ import annotations

from dataclasses import replace

from hermes_server.api.deviations import swap_rows
from hermes_server.config import Settings
from hermes_server.context import Behaviour
from hermes_server.domain.quirks import Quirk
from hermes_server.http.errors import ErrorMap
from hermes_server.units.unit import ErrorRows, Unit


def _crashes(table: ErrorMap) -> ErrorRows:
    return swap_rows(Quirk.BAD_INPUT_500, table)


def _lax_instructions(behaviour: Behaviour, settings: Settings) -> Behaviour:
    return replace(behaviour, lax_instructions=True)


UNIT = Unit(name="upstream D6", errors=_crashes, behaviour=_lax_instructions)
