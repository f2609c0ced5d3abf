"""0.21's journal-mode messages (https://github.com/NousResearch/hermes-agent/pull/96439): an ERROR
when a configured `delete` finds state.db in WAL (kept), a WARNING when a file that held data in
another mode is switched to WAL (store/journal.py)."""

from __future__ import annotations

from hermes_server.store.journal import Journal
from hermes_server.units.unit import Unit

UNIT = Unit(name="journal_mode_told", journal=Journal.TOLD)
