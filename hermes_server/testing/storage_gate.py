"""Storage faults as a database's write gate (store/gate.py): what test control hands each
database it composes in, and a registered part of the server's state.

`storage_unavailable` refuses every operation for a while, as if the file could not
be opened; `disk_full`, `read_only` and `io_error` make writes fail exactly as that
storage failure does, either every write for a while or the writes of one request
(and of the chat turn it starts: `testing/request_context.py`'s current request, whichever
database they go to). Deadlines are monotonic: a fault lasts a span of real time,
whatever the server's clock says.
"""

from __future__ import annotations

import time

from hermes_server.domain.errors import DatabaseUnavailable
from hermes_server.store.storage_faults import REASONS
from hermes_server.testing.request_context import current


class StorageGate:
    """The injected storage faults of one database."""

    def __init__(self) -> None:
        # Monotonic deadline of an outage of every operation; 0.0 means none.
        self.unavailable_until = 0.0
        # A refusal of every write until a monotonic deadline: (reason, deadline).
        self._refuse_all: tuple[str, float] | None = None

    def fail_for(self, seconds: float) -> None:
        """Refuse every operation for `seconds`, as if the file could not be opened."""
        self.unavailable_until = time.monotonic() + seconds

    def refuse_all_for(self, kind: str, seconds: float) -> None:
        """Every write fails as `kind` would, for `seconds`."""
        self._refuse_all = (REASONS[kind], time.monotonic() + seconds)

    def check_open(self, label: str) -> None:
        if self.unavailable_until:
            if time.monotonic() < self.unavailable_until:
                raise DatabaseUnavailable(f"{label} unavailable (injected storage fault)")
            self.unavailable_until = 0.0

    def refusal(self) -> str | None:
        if self._refuse_all is not None:
            reason, deadline = self._refuse_all
            if time.monotonic() < deadline:
                return reason
            self._refuse_all = None
        request = current()
        return None if request is None else request.write_refusal

    async def reset(self) -> None:
        """End an outage or a refusal of every write now."""
        self.unavailable_until = 0.0
        self._refuse_all = None


class StorageGates:
    """The gate of every database test control composes in, by the database's label (its file
    name): the factory hands each new database its gate, and a fault finds it the same way."""

    def __init__(self) -> None:
        self._gates: dict[str, StorageGate] = {}

    def of(self, label: str) -> StorageGate:
        return self._gates.setdefault(label, StorageGate())

    def by_label(self) -> dict[str, StorageGate]:
        """Every gate made so far (one per database built), by its database's label."""
        return dict(self._gates)
