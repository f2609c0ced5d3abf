"""Read probes of what a client checks before it relies on a server: the model list, readiness,
and the routes newer releases added (a 0.19.0 server answers its framework 404 to each).

Nothing here writes, on any release: unknown ids carry the run's prefix, and the newer
releases' routes are only read. A probe whose answer describes the server's own process or
configuration (`/health/detailed`) is compared by shape. The release a server answers like
shows in these even when `verify` runs read-only.
"""

from __future__ import annotations

from hermes_server.contract.masks import GEN, Masks, Runs
from hermes_server.contract.steps import Builder, Names, Step

MASKS = Masks(timestamps=frozenset({"created", "timestamp", "updated_at", "uptime_seconds"}),
              counters=frozenset(), ids=(GEN,))


def normaliser() -> Runs:
    return Runs(MASKS)


def scenarios(n: Names) -> list[Step]:
    c = Builder(n)
    c.section("discovery: the model list and readiness")
    c.add("models", "GET", "/v1/models")
    c.add("models without a key", "GET", "/v1/models", auth=None)
    c.add("readiness", "GET", "/health/detailed", figures=True)
    c.add("readiness without a key", "GET", "/health/detailed", auth=None)
    c.section("routes newer releases added, read or refused without writing")
    c.add("model options", "GET", "/api/model/options")
    c.add("model lock on an unknown session", "POST", f"/api/sessions/{n.id('nope')}/model", {"model": "x"})
    c.add("steer an unknown run", "POST", "/v1/runs/run_nope/steer", {"input": "x"})
    c.add("messages page of an unknown session", "GET", f"/api/sessions/{n.id('nope')}/messages?limit=1")
    c.add("room-member capabilities", "GET", "/v1/room-members/capabilities")
    c.add("an unknown artifact", "GET", f"/v1/artifacts/download/{n.unknown('0123456789abcdef')}")
    c.add("browser control without an upgrade", "GET", "/v1/browser-control/ws")
    return c.steps
