"""What the pytest plugin writes into reports: how a server ended, its request journal, the summary line.

Plain text helpers, apart from `plugin.py`'s hooks so each module stays short.
"""

from __future__ import annotations

import signal
from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from hermes_server.testkit.process import HermesServer

REQUESTS_SHOWN = 50


def exit_text(code: int | None) -> str:
    """`exited with code 2`, or `was killed by SIGKILL` for a negative (signal) status."""
    if code is not None and code < 0:
        try:
            return f"was killed by {signal.Signals(-code).name}"
        except ValueError:
            return f"was killed by signal {-code}"
    return f"exited with code {code}"


def journal(server: HermesServer) -> str:
    """The server's request journal since its reset, its last `REQUESTS_SHOWN` entries."""
    try:
        records = server.control.requests()
    except Exception as exc:  # noqa: BLE001 - a report must not fail because the journal cannot be read
        return f"(journal not readable: {exc})"
    shown = records[-REQUESTS_SHOWN:]
    skipped = f"({len(records) - len(shown)} earlier ones not shown)\n" if len(records) > len(shown) else ""
    return skipped + ("\n".join(r.describe() for r in shown) or "(none since the last reset)")


def startup_line(startups: Sequence[float]) -> str:
    """`hermes-server: 2 starts, start-up to first answer 0.41-0.52 s`."""
    times = sorted(startups)
    spread = f"{times[0]:.2f} s" if len(times) == 1 else f"{times[0]:.2f}-{times[-1]:.2f} s"
    count = f"{len(times)} start{'s' if len(times) != 1 else ''}"
    return f"hermes-server: {count}, start-up to first answer {spread}"
