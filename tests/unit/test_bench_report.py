"""`make bench`'s report: the issue-14 targets and the flag on a route slower at 32 connections.

Rendered from a synthetic run, so the judgement (met, not met, flagged) is checked without
measuring anything.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from benchmarks import report
from benchmarks.servers import Server
from benchmarks.workloads import WORKLOADS


def cell(rps: float, p50: float = 1.0, p99: float = 2.0) -> dict[str, Any]:
    return {"rps": rps, "p50_ms": p50, "p99_ms": p99, "max_ms": p99, "requests": int(rps * 8), "errors": 0,
            "bad_status": 0}


def run(fork_at_32: float) -> dict[str, Any]:
    """Every route 1,000 req/s (ceiling 1,050, upstream 5), fork at 32 connections as given."""
    sizes = {}
    for size in ("1000", "10000", "100000"):
        routes = {}
        for name in WORKLOADS:
            routes[name] = {c: {"hermes-server": cell(fork_at_32 if name == "fork" and c == "32" else 1000),
                                "ceiling": cell(1050), "upstream": cell(5)} for c in ("1", "32")}
        sizes[size] = {"upstream": size == "10000", "routes": routes}
    soak = {"hermes-server": {"size": 10000, "seconds": 30.0, "start_mb": 40.0, "end_mb": 44.0, "peak_mb": 45.0,
                              "load": cell(500), "mix": []}}
    machine = {"date": "2026-12-02 00:00 UTC", "nproc": 2, "cpu_model": "cpu", "memory_gb": 1.0,
               "load_average_at_start": [0.0, 0.0, 0.0], "os": "Linux", "python": "3.11", "sqlite": "3.40",
               "uvicorn": "0", "starlette": "0", "uvloop": "0", "httptools": "0", "wrk": "wrk"}
    return {"sizes": sizes, "soak": soak, "machine": machine, "elapsed_seconds": 1,
            "options": {"mode": "full", "sizes": [1000, 10000, 100000], "upstream_sizes": [10000],
                        "seconds_per_run": 8.0, "soak_seconds": 30.0, "connections": [1, 32],
                        "routes": list(WORKLOADS)}}


def target_row(text: str, start: str) -> str:
    return next(line for line in text.splitlines() if line.startswith(f"| {start}"))


def test_a_route_slower_at_32_connections_is_flagged_and_fails_its_target() -> None:
    text = report.render(run(fork_at_32=900))
    assert "| fork ▼ |" in text
    assert "**Slower at 32 connections than at 1:** fork (900 against 1,000 req/s" in text
    assert target_row(text, "every route").endswith("| **no** |")


def test_no_flag_when_every_route_holds() -> None:
    text = report.render(run(fork_at_32=1000))
    assert " ▼ |" not in text and "Slower at 32" not in text
    assert text.count("No route is slower at 32 connections than at 1.") == 3
    assert target_row(text, "every route").endswith("| yes |")
    assert target_row(text, "create").endswith("| yes |")  # 200× upstream
    assert target_row(text, "get").endswith("| yes |")  # 95% of the ceiling at 1 and 32 connections
    assert target_row(text, "list (limit 50)").endswith("| yes |")


def test_a_run_with_unexpected_statuses_names_them_from_the_access_log(tmp_path: Path) -> None:
    log = tmp_path / "hermes.log"
    log.write_text("2026-12-02 16:37:34,290 INFO hermes_server.access: GET /api/sessions 200 0.6ms session=-\n")
    server = Server("hermes-server", "http://127.0.0.1:1", None, 0, log=log)
    start = server.log_size()
    with log.open("a") as out:
        out.write("2026-12-02 16:37:35,001 INFO hermes_server.access: GET /api/sessions 503 0.6ms session=-\n"
                  "2026-12-02 16:37:35,002 INFO hermes_server.access: PATCH /api/sessions/{session_id} 200 1.0ms\n"
                  "2026-12-02 16:37:35,003 INFO hermes_server.access: GET /api/sessions 503 0.7ms session=-\n"
                  "2026-12-02 16:37:35,004 WARNING hermes_server.store: busy for 2.0 s\n"
                  "2026-12-02 16:37:35,005 INFO hermes_server.access: PATCH /api/sessions/{session_id} 409 1.0ms\n")
    assert server.refused_since(start) == {"GET /api/sessions 503": 2, "PATCH /api/sessions/{session_id} 409": 1}
    assert Server("upstream", "http://127.0.0.1:1", None, 0).refused_since(0) == {}
