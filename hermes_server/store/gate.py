"""The write gate a `Database` is built with: where test control refuses storage on purpose.

A database asks its gate before every operation whether the file is to be treated as
unavailable, and before queueing a write whether that write is to fail as a storage
failure would. The default gate, `NO_GATE`, never refuses (the default server pays
one call for it); `serve --fixture-api` hands each database a gate that implements
its storage faults (testing/storage_gate.py), the way `chat/hooks.py`'s `NO_HOOKS`
stands in for its turn hooks. A refused write goes through the same transaction path
as a real full disk does, so a client sees the same answers and the same log lines.
"""

from __future__ import annotations

from typing import Protocol


class WriteGate(Protocol):
    """What a `Database` asks before it reads or writes."""

    def check_open(self, label: str) -> None:
        """Raise `DatabaseUnavailable` when every operation on the file named `label` is refused now."""

    def refusal(self) -> str | None:
        """The storage reason the write about to be queued fails with (`storage_faults.REASONS`), or None."""


class _NoGate:
    """Lets everything through."""

    def check_open(self, label: str) -> None:
        return None

    def refusal(self) -> str | None:
        return None


NO_GATE: WriteGate = _NoGate()
