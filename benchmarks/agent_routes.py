"""Runs submitted and drained per second, and responses per second: hermes-server vs upstream 0.19.0.

    python -m benchmarks.agent_routes [--seconds 8] [--clients 1,8] [--upstream-venv DIR]

Each measurement is a closed loop of `clients` concurrent clients for `seconds`:

- **runs**: `POST /v1/runs`, then `GET /v1/runs/{id}/events` read to `: stream closed`
  (the run submitted and its whole event stream drained);
- **responses**: `POST /v1/responses`, non-streamed.

Both servers on fresh homes, hermes-server with its echo agent and upstream (when the
oracle's virtualenv exists) with the oracle's mock model, measured one after the other
per workload so they see the same machine conditions. Eight clients stay under both
servers' cap of 10 live runs. Prints a Markdown table (as docs/benchmarks.md shows it).
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import httpx

from benchmarks import servers

PORT_HERMES, PORT_UPSTREAM = 18630, 18632  # upstream's mock model on 18633


async def _run_drained(client: httpx.AsyncClient, n: int) -> None:
    answer = await client.post("/v1/runs", json={"input": f"bench run {n}"})
    answer.raise_for_status()
    run_id = answer.json()["run_id"]
    async with client.stream("GET", f"/v1/runs/{run_id}/events") as events:
        body = b"".join([chunk async for chunk in events.aiter_raw()])
    if not body.endswith(b": stream closed\n\n"):
        raise RuntimeError(f"run {run_id} ended without `: stream closed`")


async def _response(client: httpx.AsyncClient, n: int) -> None:
    answer = await client.post("/v1/responses", json={"input": f"bench response {n}"})
    answer.raise_for_status()


WORKLOADS: dict[str, Callable[[httpx.AsyncClient, int], Awaitable[None]]] = {
    "runs submitted and drained": _run_drained,
    "responses (plain)": _response,
}


async def _closed_loop(server: servers.Server, work: Callable[[httpx.AsyncClient, int], Awaitable[None]],
                       clients: int, seconds: float) -> tuple[float, float]:
    """(operations per second, median latency in ms) of `clients` clients looping for `seconds`."""
    headers = {"Authorization": f"Bearer {server.key}"} if server.key else {}
    latencies: list[float] = []
    counter = iter(range(10**9))
    async with httpx.AsyncClient(base_url=server.url, headers=headers, timeout=60) as client:
        for _ in range(2):  # warm up (upstream's first agent turn takes seconds)
            await work(client, next(counter))
        deadline = time.monotonic() + seconds

        async def loop() -> None:
            while time.monotonic() < deadline:
                began = time.monotonic()
                await work(client, next(counter))
                latencies.append(time.monotonic() - began)

        began = time.monotonic()
        await asyncio.gather(*(loop() for _ in range(clients)))
        elapsed = time.monotonic() - began
    return len(latencies) / elapsed, statistics.median(latencies) * 1000 if latencies else 0.0


def measure(seconds: float, clients: list[int], venv: Path | None) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="hs-bench-agent-") as work:
        started = [servers.start_hermes(Path(work) / "hermes", PORT_HERMES)]
        if venv is not None and servers.oracle_available(venv):
            started.append(servers.start_upstream(Path(work) / "upstream", PORT_UPSTREAM, venv))
        try:
            for name, workload in WORKLOADS.items():
                for count in clients:
                    row: dict[str, Any] = {"workload": name, "clients": count}
                    for server in started:
                        row[server.name] = asyncio.run(_closed_loop(server, workload, count, seconds))
                    rows.append(row)
        finally:
            for server in started:
                server.stop()
    return rows


def table(rows: list[dict[str, Any]]) -> str:
    lines = ["| workload | clients | hermes-server /s (median ms) | upstream /s (median ms) | ratio |",
             "| --- | --- | --- | --- | --- |"]
    for row in rows:
        ours, theirs = row["hermes-server"], row.get("upstream")
        cell = f"{theirs[0]:.1f} ({theirs[1]:.0f})" if theirs else "n/a"
        ratio = f"{ours[0] / theirs[0]:.1f}×" if theirs and theirs[0] else "n/a"
        lines.append(f"| {row['workload']} | {row['clients']} | {ours[0]:.1f} ({ours[1]:.0f}) | {cell} | {ratio} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seconds", type=float, default=8.0)
    parser.add_argument("--clients", default="1,8", help="comma-separated client counts (at most 10)")
    parser.add_argument("--upstream-venv", type=Path, default=Path("/tmp/hermes-oracle-venv"))
    parser.add_argument("--no-upstream", action="store_true")
    args = parser.parse_args(argv)
    clients = [min(10, int(c)) for c in args.clients.split(",") if c.strip()]
    rows = measure(args.seconds, clients, None if args.no_upstream else args.upstream_venv)
    print(table(rows))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
