"""What a handler needs besides the request: settings, the database, the clock, ids.

The optional parts exist only for the test-control extensions (DECISIONS.md
"Extensions"): `faults` and `journal` are None unless `serve --fixture-api`,
`id_suffix` is None unless `serve --deterministic`; handlers test for None, so
the default server pays nothing for them.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable

from hermes_server.config import Settings
from hermes_server.domain.ids import generate_session_id
from hermes_server.store.db import Database

if TYPE_CHECKING:
    from hermes_server.faults import FaultRegistry
    from hermes_server.fixtures.journal import Journal


@dataclass
class Services:
    """Shared by every request of one app instance."""

    settings: Settings
    db: Database
    clock: Callable[[], float] = field(default=time.time)
    # Source of the 8-hex part of generated ids; None means a random uuid4 prefix, as upstream.
    id_suffix: Callable[[], str] | None = None
    faults: FaultRegistry | None = None
    journal: Journal | None = None
    # The decoded `serve --fixture` document, which `POST /_fixture/reset` goes back to.
    fixture_document: Any = None

    def now(self) -> float:
        """Current Unix time in float seconds (settable in deterministic mode)."""
        return self.clock()

    def new_session_id(self) -> str:
        """A generated id in upstream's `api_<seconds>_<8 hex>` form."""
        return generate_session_id(self.now(), self.id_suffix)
