"""What a handler needs besides the request: settings, the database, the clock, ids."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Callable

from hermes_server.config import Settings
from hermes_server.domain.ids import generate_session_id
from hermes_server.store.db import Database


@dataclass
class Services:
    """Shared by every request of one app instance."""

    settings: Settings
    db: Database
    clock: Callable[[], float] = field(default=time.time)

    def now(self) -> float:
        """Current Unix time in float seconds (settable in deterministic mode)."""
        return self.clock()

    def new_session_id(self) -> str:
        """A generated id in upstream's `api_<seconds>_<8 hex>` form."""
        return generate_session_id(self.now())
