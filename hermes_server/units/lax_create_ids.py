"""D3 under `--upstream-quirks`: `POST /api/sessions` refuses, of the control characters in an id, only
CR, LF and NUL, as 0.19.0 does (docs/differences.md; domain/ids.py)."""

from __future__ import annotations

from dataclasses import replace
from functools import partial

from hermes_server.config import Settings
from hermes_server.context import Behaviour
from hermes_server.domain.ids import create_id_error
from hermes_server.units.unit import Unit


def _lax(behaviour: Behaviour, settings: Settings) -> Behaviour:
    return replace(behaviour, create_id_problem=partial(create_id_error, lax=True))


UNIT = Unit(name="upstream D3", behaviour=_lax)
