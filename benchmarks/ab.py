"""Version profiles against 0.19.0, one request cycle at a time: `python -m benchmarks.ab`.

`benchmarks.run --compare-versions` measures each profile with wrk for seconds at a time, the
servers in turn. On a shared 2-core machine one server's req/s then swings by ±15–30% from one
run to the next (the machine's speed drifts over seconds), so five rounds cannot tell a 10%
difference from noise. This measures the one-connection case so that drift cancels: servers
of every profile, each over its own copy of the same dataset, are driven in lock step, one
route cycle (a plain route's request, or a changing variant's PATCH and GET) on each server
in turn, the order rotating every cycle, over one kept-alive connection each. A profile's
figure for a route is the median over the cycles of its time divided by the 0.19.0 server's
time in the same cycle: two timings taken a millisecond apart.

    python -m benchmarks.ab                      # every route, 10k sessions, 0.20.4 and 0.21.2
    python -m benchmarks.ab --routes list-changing get --cycles 2000 --size 1000

The client is a raw socket writing prepared requests (a few µs a request), so the figures are
the servers' own; every answer must be 2xx. Beside each ratio, the CPU each server process used
over the same cycles (0.19.0's over the profile's), which is what throughput at many connections
comes down to on a saturated machine. It prints one table; nothing is written.
"""

from __future__ import annotations

import argparse
import os
import shutil
import socket
import statistics
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from benchmarks import dataset, servers, workloads
from benchmarks.targets import PROFILE_GOAL as GOAL
from benchmarks.workloads import EVERY, PAGE, Workload, page_ids, sample_ids
from benchmarks.wrk import Call
from hermes_server.domain.profiles import DEFAULT_VERSION, PROFILES

PORT_BASE = 18870
WARM_UP = 50  # cycles per route not counted (caches, first statements prepared)


class Connection:
    """One kept-alive HTTP/1.1 connection to a server, sending prepared requests."""

    def __init__(self, server: servers.Server) -> None:
        host, port = server.url.removeprefix("http://").split(":")
        self.sock = socket.create_connection((host, int(port)))
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.key = server.key
        self.buffer = b""

    def request(self, method: str, path: str, body: str | None) -> int:
        """Send one request and read its whole answer; the status."""
        payload = (body or "").encode()
        head = (f"{method} {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer {self.key}\r\n"
                f"Content-Type: application/json\r\nContent-Length: {len(payload)}\r\n\r\n")
        self.sock.sendall(head.encode() + payload)
        while b"\r\n\r\n" not in self.buffer:
            self._read()
        header, _, self.buffer = self.buffer.partition(b"\r\n\r\n")
        lines = header.decode("latin-1").split("\r\n")
        lengths = [int(line.split(":", 1)[1]) for line in lines[1:] if line.lower().startswith("content-length:")]
        if not lengths:
            raise SystemExit(f"ab: {method} {path} answered without a Content-Length (a stream is not measured here)")
        length = lengths[0]
        while len(self.buffer) < length:
            self._read()
        self.buffer = self.buffer[length:]
        return int(lines[0].split(" ")[1])

    def _read(self) -> None:
        chunk = self.sock.recv(1 << 16)
        if not chunk:
            raise ConnectionError("the server closed the connection")
        self.buffer += chunk

    def close(self) -> None:
        self.sock.close()


def cpu_seconds(pid: int) -> float:
    """User plus system CPU the process has used (its threads included), from /proc."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


@dataclass
class Figures:
    """Per server, each cycle's seconds (the cycle's index is the position), and the CPU the
    server used over the counted cycles."""

    seconds: dict[str, list[float]] = field(default_factory=dict)
    cpu: dict[str, float] = field(default_factory=dict)

    def ratio(self, name: str, base: str) -> float:
        """Median over the cycles of base time / this server's time: 1.0 is as fast, 0.9 is 10% slower."""
        return statistics.median(b / t for b, t in zip(self.seconds[base], self.seconds[name], strict=True))

    def cpu_ratio(self, name: str, base: str) -> float:
        """Base CPU / this server's CPU over the same cycles (the clock's ticks: about ±2% at 1 s)."""
        return self.cpu[base] / self.cpu[name] if self.cpu.get(name) else float("nan")


def cycle(connection: Connection, calls: tuple[Call, ...], session_id: str, unique: str) -> float:
    """One route cycle on one server; its seconds. A non-2xx answer stops the run."""
    start = time.perf_counter()
    for call in calls:
        path, body = call.expand(session_id, unique)
        status = connection.request(call.method, path, body)
        if not 200 <= status < 300:
            raise SystemExit(f"ab: {call.method} {path} answered {status}")
    return time.perf_counter() - start


def measure(route: Workload, named: dict[str, Connection], pids: dict[str, int], ids: list[str],
            cycles: int, tag: str) -> Figures:
    """`cycles` counted cycles of `route` on every server, in lock step, the order rotating; `tag`
    makes the route's ids and titles its own (another route's PATCH titles would collide: 400)."""
    figures = Figures({name: [] for name in named})
    order = list(named)
    cpu_at_start: dict[str, float] = {}
    for i in range(WARM_UP + cycles):
        if i == WARM_UP:
            cpu_at_start = {name: cpu_seconds(pids[name]) for name in named}
        turn = order[i % len(order):] + order[:i % len(order)]
        for name in turn:
            # The same ids and titles on every server (each has its own copy): a cycle is the same work.
            seconds = cycle(named[name], route.calls, ids[i % len(ids)], f"{tag}{i}_")
            if i >= WARM_UP:
                figures.seconds[name].append(seconds)
    figures.cpu = {name: cpu_seconds(pids[name]) - start for name, start in cpu_at_start.items()}
    return figures


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.ab", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--size", type=int, default=10000, help="dataset size (sessions; default 10000)")
    parser.add_argument("--versions", nargs="+", default=["0.20.4", "0.21.2"], metavar="VERSION",
                        help="profiles compared with 0.19.0 (default: 0.20.4 0.21.2); 0.19.0 itself gives "
                             "an A/A run, the harness's own spread")
    parser.add_argument("--routes", nargs="+", metavar="NAME", help="routes of benchmarks/workloads.py (default: all)")
    parser.add_argument("--cycles", type=int, default=600, help="counted cycles per route and server (default 600)")
    parser.add_argument("--port-base", type=int, default=PORT_BASE)
    args = parser.parse_args(argv)
    unknown = [v for v in args.versions if v not in PROFILES]
    if unknown:
        parser.error(f"--versions: {', '.join(unknown)} (known: {', '.join(PROFILES)})")
    if args.cycles < 1:
        parser.error("--cycles must be at least 1")
    return args


def labels(versions: list[str]) -> list[str]:
    """A name per compared server: its version, numbered from the second server of a version on
    (the measured 0.19.0 is the first): `--versions 0.19.0` is an A/A run of `0.19.0#2`."""
    counts = {DEFAULT_VERSION: 1}
    names = []
    for version in versions:
        counts[version] = counts.get(version, 0) + 1
        names.append(version if counts[version] == 1 else f"{version}#{counts[version]}")
    return names


def _place(pids: list[int], cpus: set[int]) -> None:
    """Every thread of this process (pid 0) or of `pids` allowed on `cpus` only."""
    for pid in pids:
        tasks = [0] if pid == 0 else [int(t) for t in os.listdir(f"/proc/{pid}/task")]
        for task in tasks:
            try:
                os.sched_setaffinity(task, cpus)
            except OSError:  # a thread that just ended
                pass


def pinned(pids: list[int]) -> set[int] | None:
    """Put this process and every thread of `pids` on one CPU (the last this process may use); the
    CPUs they had, for `unpin`. A server on the client's core answers through a context switch,
    one on the other core through a cross-core wake-up; which one a server gets is the scheduler's
    choice for the whole run, and moved A/A pairs of one build apart by up to 9%."""
    cpus = set(os.sched_getaffinity(0))
    if len(cpus) < 2:
        return None
    _place([0, *pids], {max(cpus)})
    return cpus


def unpin(pids: list[int], cpus: set[int] | None) -> None:
    """This process and the servers back on `cpus` (the wrk runs after a lock step use both cores)."""
    if cpus is not None:
        _place([0, *pids], cpus)


def lockstep(started: list[servers.Server], routes: list[Workload], size: int, cycles: int,
             log: Callable[[str], None] = print) -> dict[str, dict[str, dict[str, float]]]:
    """Each route in lock step on `started` (the first is the one compared against), as
    {route: {server name: {"us": median cycle, "ratio": per-cycle speed, "cpu": CPU ratio}}};
    `log` gets one line per route. Client and servers share one CPU meanwhile (`pinned`)."""
    pids = [server.pid for server in started]
    cpus = pinned(pids)
    try:
        return _lockstep(started, routes, size, cycles, log, None if cpus is None else max(cpus))
    finally:
        unpin(pids, cpus)


def _lockstep(started: list[servers.Server], routes: list[Workload], size: int, cycles: int,
              log: Callable[[str], None], cpu: int | None) -> dict[str, dict[str, dict[str, float]]]:
    base = started[0].name
    log(f"client and servers on CPU {cpu}" if cpu is not None else "one CPU: nothing to pin")
    pages = page_ids(started[0])
    log(f"{'route':<18}{base + ' µs':>11}"
        + "".join(f"{s.name + ' µs':>12}{s.name + ' ratio':>14}{'cpu':>7}" for s in started[1:]))
    found: dict[str, dict[str, dict[str, float]]] = {}
    for n, route in enumerate(routes):
        ids = pages if route.ids == PAGE else sample_ids(size, spread=route.ids == EVERY)
        named = {server.name: Connection(server) for server in started}
        try:
            figures = measure(route, named, {server.name: server.pid for server in started}, ids, cycles, f"ab{n}x")
        finally:
            for connection in named.values():
                connection.close()
        row = found[route.name] = {
            name: {"us": round(statistics.median(seconds) * 1e6, 1),
                   "ratio": 1.0 if name == base else round(figures.ratio(name, base), 4),
                   "cpu": 1.0 if name == base else round(figures.cpu_ratio(name, base), 4)}
            for name, seconds in figures.seconds.items()}
        log(f"{route.name:<18}{row[base]['us']:>11.0f}" + "".join(
            f"{row[s.name]['us']:>12.0f}{row[s.name]['ratio']:>11.1%}{' **' if row[s.name]['ratio'] < GOAL else '':<3}"
            f"{row[s.name]['cpu']:>7.0%}" for s in started[1:]))
    return found


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    compared = labels(args.versions)
    work = Path(tempfile.mkdtemp(prefix="hermes-ab-"))
    started: list[servers.Server] = []
    try:
        for i, (version, name) in enumerate(zip([DEFAULT_VERSION, *args.versions], [DEFAULT_VERSION, *compared],
                                                strict=True)):
            home = work / f"hermes-{i}"
            dataset.copy_to(dataset.cached(args.size), home)
            server = servers.start_profile(home, args.port_base + i, version)
            server.name = name
            started.append(server)
        print(f"{args.size:,} sessions, {args.cycles} cycles per route and server (after {WARM_UP} not counted); "
              "the ratio is the median over cycles of 0.19.0's time / the profile's (below 90%: **)")
        print("µs: median cycle; ratio: per-cycle speed against 0.19.0; cpu: 0.19.0's CPU / the profile's, "
              "same cycles")
        found = lockstep(started, workloads.select(args.routes), args.size, args.cycles)
        below = [f"{route} ({name})" for route, row in found.items() for name in compared if row[name]["ratio"] < GOAL]
        print("every route within 10% of 0.19.0" if not below else "below 90%: " + ", ".join(below))
        return 1 if below else 0
    finally:
        for server in started:
            server.stop()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    raise SystemExit(main())
