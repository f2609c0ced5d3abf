"""How long `GET /_fixture/audit` takes over a full request journal (1,000 entries).

    python -m benchmarks.audit [--entries N] [--rounds R]

The audit is computed from the journal on every call (nothing is kept between calls), so
its cost grows with the journal; a suite that audits after every test pays it each time.
This starts hermes-server with `--fixture-api` on a fresh home, fills the journal with a
connector-like mix (creates, chats, forks, patches, gets, message reads, lists, some calls
under faults so that rules have something to find), then times the audit over `--rounds`
calls on one kept-alive connection and prints the median, p90 and worst, against the
50 ms budget docs/testing-connectors.md states.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

import httpx

from benchmarks import servers

PORT = 18996
BUDGET_MS = 50.0


def fill(client: httpx.Client, entries: int) -> None:
    """Send `entries` requests shaped like a connector's traffic, a few of them faulted."""
    sent = 0

    def call(method: str, path: str, **kwargs: object) -> None:
        nonlocal sent
        if sent < entries:
            client.request(method, path, **kwargs)  # type: ignore[arg-type]
            sent += 1

    n = 0
    while sent < entries:
        sid = f"audit-{n}"
        call("POST", "/api/sessions", json={"id": sid})
        if n % 10 == 0:  # an unsafe call whose outcome was lost, then sent again unread
            client.put("/_fixture/faults", json={"faults": [
                {"route": "session_chat", "kind": "status", "status": 503, "session_id": sid, "times": 1}]})
            call("POST", f"/api/sessions/{sid}/chat", json={"message": f"hello {n}"})
        call("POST", f"/api/sessions/{sid}/chat", json={"message": f"hello {n}"})
        call("GET", f"/api/sessions/{sid}")
        call("GET", f"/api/sessions/{sid}/messages")
        call("PATCH", f"/api/sessions/{sid}", json={"title": f"t{n}"})
        call("POST", f"/api/sessions/{sid}/fork", json={"title": f"f{n}"})
        call("GET", "/api/sessions", params={"limit": 20})
        n += 1


def measure(client: httpx.Client, rounds: int) -> tuple[int, int, list[float]]:
    """(entries checked, findings, milliseconds per call) over `rounds` audits."""
    times: list[float] = []
    checked = findings = 0
    for _ in range(rounds):
        start = time.perf_counter()
        answer = client.get("/_fixture/audit")
        times.append((time.perf_counter() - start) * 1000)
        answer.raise_for_status()
        body = answer.json()
        checked, findings = body["checked"], len(body["findings"])
    return checked, findings, times


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--entries", type=int, default=1000, help="journal entries to audit (default 1000, the journal's bound)")
    parser.add_argument("--rounds", type=int, default=50, help="audits to time (default 50)")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="bench-audit-") as work:
        home = Path(work) / "home"
        home.mkdir()
        server = servers.start_hermes(home, PORT, "--fixture-api")
        try:
            headers = {"Authorization": f"Bearer {server.key}"}
            with httpx.Client(base_url=server.url, headers=headers, timeout=30) as client:
                fill(client, args.entries)
                client.get("/_fixture/audit")  # the first call warms imports and caches
                checked, findings, times = measure(client, args.rounds)
        finally:
            server.stop()
    times.sort()
    median, p90 = statistics.median(times), times[int(len(times) * 0.9) - 1]
    print(f"audit of {checked} journal entries ({findings} findings), {len(times)} calls: "
          f"median {median:.1f} ms, p90 {p90:.1f} ms, worst {times[-1]:.1f} ms "
          f"(budget {BUDGET_MS:.0f} ms: {'met' if median < BUDGET_MS else 'NOT met'})")
    return 0 if median < BUDGET_MS else 1


if __name__ == "__main__":
    sys.exit(main())
