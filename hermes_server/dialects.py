"""The dialects this server knows; each is served only when its own switch is on
(hermes_server/families.py says what a dialect declares and adds)."""

from __future__ import annotations

from hermes_server.families import Dialect
from hermes_server.hermrun.dialect import HERM_RUN

KNOWN: tuple[Dialect, ...] = (HERM_RUN,)
