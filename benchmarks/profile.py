"""Where one route's time goes: CPU per request by thread, and optionally a py-spy profile.

    python -m benchmarks.profile ROUTE [--connections N] [--seconds S] [--size N]
                                       [--py-spy OUT.txt [--native | --gil]] [-- SERVE_ARGS...]

Starts hermes-server on a fresh copy of a cached dataset, drives ROUTE (a name of
benchmarks/workloads.py) with wrk, and prints requests/s, latency and, for each thread
of the server (the event loop, then the others in the order they started: writer,
checkpointer, readers, as py-spy names them), its user and system CPU
divided by the requests completed. CPU per request is what benchmarks/analysis.md
quotes: a busy machine disturbs it far less than requests/s. With `--py-spy` the run is
also sampled by py-spy (`pip install py-spy`; not a dependency of the project) into
collapsed stacks, and the frames with the most samples are printed. Arguments after
`--` go to `hermes-server serve` (e.g. `-- --read-cache-mb 0` to measure cache misses).
"""

from __future__ import annotations

import argparse
import collections
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from benchmarks import dataset, servers, wrk
from benchmarks.workloads import EVERY, WORKLOADS, sample_ids, select

PORT = 18990


def thread_cpu(pid: int) -> dict[int, tuple[int, int]]:
    """Thread id → (user, system) clock ticks, from /proc."""
    ticks: dict[int, tuple[int, int]] = {}
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            stat = Path(f"/proc/{pid}/task/{tid}/stat").read_text()
        except FileNotFoundError:  # the thread ended meanwhile
            continue
        fields = stat.rsplit(")", 1)[1].split()
        ticks[int(tid)] = (int(fields[11]), int(fields[12]))
    return ticks


def py_spy() -> str:
    """py-spy beside this Python (a venv's bin) or on PATH; a one-line refusal without it."""
    beside = Path(sys.executable).parent / "py-spy"
    found = str(beside) if beside.is_file() else shutil.which("py-spy")
    if found is None:
        raise SystemExit("bench: --py-spy needs py-spy (pip install py-spy)")
    return found


def top_frames(collapsed: Path, count: int = 25) -> list[tuple[float, str]]:
    """The frames most often on the stack (inclusive), as shares of all samples."""
    inclusive: collections.Counter[str] = collections.Counter()
    total = 0
    for line in collapsed.read_text().splitlines():
        stack, _, samples = line.rpartition(" ")
        total += int(samples)
        for frame in set(stack.split(";")):
            inclusive[frame] += int(samples)
    return [(n / total, frame) for frame, n in inclusive.most_common(count)] if total else []


def main(argv: list[str] | None = None) -> int:
    args_in = sys.argv[1:] if argv is None else argv
    extra: list[str] = []
    if "--" in args_in:
        at = args_in.index("--")
        args_in, extra = args_in[:at], args_in[at + 1:]
    parser = argparse.ArgumentParser(prog="python -m benchmarks.profile", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("route", help=f"one of: {', '.join(WORKLOADS)}")
    parser.add_argument("--connections", type=int, default=1)
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--size", type=int, default=10_000, help="dataset size (sessions)")
    parser.add_argument("--py-spy", type=Path, metavar="OUT", help="also record collapsed stacks here")
    parser.add_argument("--native", action="store_true", help="py-spy: include C frames (SQLite, libc)")
    parser.add_argument("--gil", action="store_true", help="py-spy: only samples holding the GIL")
    args = parser.parse_args(args_in)
    workload = select([args.route])[0]
    spy_path = py_spy() if args.py_spy else None
    work = Path(tempfile.mkdtemp(prefix="hermes-profile-"))
    home = work / "home"
    dataset.copy_to(dataset.cached(args.size), home)
    # The cached dataset is a 0.19.0 home: a newer profile (`-- --hermes-version V`) adds its columns first.
    if "--hermes-version" in extra and "--migrate-home" not in extra:
        extra = [*extra, "--migrate-home"]
    server = servers.start_hermes(home, PORT, *extra)
    try:
        ids = sample_ids(args.size, spread=workload.ids == EVERY)
        spy = None
        if args.py_spy:
            record = [str(spy_path), "record", "-p", str(server.pid), "-d", str(max(1, int(args.seconds) - 1)),
                      "-r", "500", "-f", "raw", "-o", str(args.py_spy), "--threads"]
            record += ["--native"] if args.native else ["--nonblocking"]
            record += ["--gil"] if args.gil else []
            spy = threading.Thread(target=lambda: (time.sleep(0.5), subprocess.run(record, capture_output=True)))
            spy.start()
        before = thread_cpu(server.pid)
        result = wrk.run(server.url, list(workload.calls), ids, tag=f"p{int(time.time()) % 100000}_", key=server.key,
                         connections=args.connections, seconds=args.seconds, wrk_path=wrk.ensure_wrk())
        after = thread_cpu(server.pid)
        if spy is not None:
            spy.join()
    finally:
        server.stop()
        shutil.rmtree(work, ignore_errors=True)
    per_second = os.sysconf("SC_CLK_TCK")
    requests = max(1, result.requests)
    print(f"{workload.name} at {args.connections} connection(s): {result.rps:,.0f} req/s, "
          f"p50 {result.p50_ms:.2f} ms, p99 {result.p99_ms:.2f} ms")
    for tid, (user, system) in sorted(after.items()):
        user0, system0 = before.get(tid, (0, 0))
        if user - user0 or system - system0:
            label = "event loop" if tid == server.pid else f"thread {tid}"
            print(f"  {label:<16} user {1e6 * (user - user0) / per_second / requests:7.0f} µs/request"
                  f"   system {1e6 * (system - system0) / per_second / requests:7.0f} µs/request")
    if args.py_spy and args.py_spy.exists():
        for share, frame in top_frames(args.py_spy):
            print(f"  {100 * share:5.1f}%  {frame[:140]}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
