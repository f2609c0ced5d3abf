"""0.20's journal mode (https://github.com/NousResearch/hermes-agent/pull/74485): state.db follows
`database.journal_mode` of the home's config.yaml, `wal` (the default) or `delete`; a file already
in WAL stays WAL (store/journal.py)."""

from __future__ import annotations

from hermes_server.store.journal import Journal
from hermes_server.units.unit import Unit

UNIT = Unit(name="journal_mode_config", journal=Journal.CONFIGURED)
