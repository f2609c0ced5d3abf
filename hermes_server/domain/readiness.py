"""How readiness probes combine into the statuses of `GET /health/detailed`.

Upstream reports one entry per check (`{"status": "ok"|"degraded", ...}`), calls the
whole service degraded when any check is, and derives "busy"/"drainable" from the
gateway state. These rules are pure so they can be tested without a server.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

OK = "ok"
DEGRADED = "degraded"

# A disk this full makes the service degraded (upstream's threshold).
DISK_DEGRADED_PERCENT = 90.0

# Gateway states in which the service is up; only "running" accepts a drain.
_SERVING_STATES = frozenset({"running", "draining"})
_DRAINABLE_STATES = frozenset({"running"})
# Platform states that count as connected.
_CONNECTED = frozenset({"connected", "running", "ok"})


def check(status: str, detail: str | None = None, **extra: Any) -> dict[str, Any]:
    """One check entry: status, an optional short detail, then its figures."""
    entry: dict[str, Any] = {"status": status}
    if detail:
        entry["detail"] = detail
    entry.update(extra)
    return entry


def disk_check(total: int, used: int, free: int) -> dict[str, Any]:
    """Used share rounded to 0.1 % (a float, as upstream), free space in bytes (an int)."""
    used_percent = round(used / total * 100, 1) if total else 0.0
    return check(DEGRADED if used_percent >= DISK_DEGRADED_PERCENT else OK,
                 used_percent=used_percent, free_bytes=int(free))


def gateway_check(state: str, platforms: Mapping[str, Any]) -> dict[str, Any]:
    """The serving state and how many platforms are connected."""
    connected = sum(
        1 for value in platforms.values()
        if isinstance(value, dict) and str(value.get("state") or "").lower() in _CONNECTED
    )
    return check(OK if state in _SERVING_STATES else DEGRADED,
                 state=state, connected_platforms=connected, platforms=len(platforms))


def overall(checks: Mapping[str, Mapping[str, Any]]) -> str:
    """ok only when every check is ok."""
    return OK if all(entry.get("status") == OK for entry in checks.values()) else DEGRADED


def gateway_busy(state: str, active_agents: int) -> bool:
    """Busy means running with at least one agent turn in flight."""
    return state in _DRAINABLE_STATES and active_agents > 0


def gateway_drainable(state: str) -> bool:
    """A drain can start only from the running state."""
    return state in _DRAINABLE_STATES
