"""D11 under `--upstream-quirks`: a request head past one of the limits is refused with 0.19.0's own
text instead of the envelope (docs/differences.md; cli/transport.py, which is built with it)."""

from __future__ import annotations

from dataclasses import replace

from hermes_server.config import Settings
from hermes_server.context import Behaviour
from hermes_server.units.unit import Unit


def _upstream_text(behaviour: Behaviour, settings: Settings) -> Behaviour:
    return replace(behaviour, upstream_head_refusals=True)


UNIT = Unit(name="upstream D11", behaviour=_upstream_text)
