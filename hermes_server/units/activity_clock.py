"""0.20+'s `last_active` on a v25+ home: the freshest of `sessions.last_activity_at` and the newest
message (upstream's `_sql_freshest_of`), where the file has that column; the list is ordered by it."""

from __future__ import annotations

from hermes_server.store.schema import Reading
from hermes_server.units.unit import Unit

UNIT = Unit(name="activity_clock", reading=Reading(activity_clock=True))
