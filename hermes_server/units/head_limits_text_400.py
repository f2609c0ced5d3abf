"""D11 under `--upstream-quirks`: a request head past a limit of 0.19.0's is refused with 0.19.0's
own `400` text instead of the envelope. The head never reaches a handler: the transport
(cli/transport.py) refuses it before parsing, reading this strategy from the built app."""

from __future__ import annotations

from dataclasses import replace

from hermes_server.config import Settings
from hermes_server.context import Behaviour
from hermes_server.units.unit import Unit


def _upstream_refusals(behaviour: Behaviour, settings: Settings) -> Behaviour:
    return replace(behaviour, upstream_head_refusals=True)


UNIT = Unit(name="upstream D11", behaviour=_upstream_refusals)
