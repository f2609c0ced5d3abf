"""`make bench`: hermes-server against upstream hermes-agent 0.19.0 and a bare ceiling, in one run.

For each dataset size, fresh copies of the same cached state.db are served by
hermes-server and (at the sizes in --upstream-sizes, when the oracle's
virtualenv exists) by upstream; a bare Starlette app (the ceiling) replays
hermes-server's own recorded answers from memory, checked byte for byte before
it is measured. Every route (benchmarks/workloads.py) is driven by wrk at 1 and
32 connections, servers interleaved per route so they see the same machine
conditions. Then fresh servers go through a mixed soak while their resident
memory is sampled. The figures, their ratios, the targets of issue 14 and a
description of the machine go to docs/benchmarks.md (plus a JSON copy under
benchmarks/results/).

    python -m benchmarks.run            # full: 1k, 10k, 100k; 8 s per run; 30 s soak
    python -m benchmarks.run --quick    # 1k and 10k; 3 s per run; 10 s soak; prints only
    python -m benchmarks.run --quick --sizes 1000 --routes list get-changing --soak-seconds 0
    python -m benchmarks.run --quick --sizes 10000 --compare-versions 0.20.4 0.21.2 --rounds 3 --no-upstream

`--hermes-version` chooses the version profile hermes-server is measured (and recorded for the
ceiling) as; `--compare-versions` measures a hermes-server of each of those profiles beside it,
interleaved route by route, so each profile's ratio to it is taken in the same run. `--rounds N`
repeats every route's runs N times, the servers in turn (each round starting with the next one),
and keeps each server's median. With compared profiles, every route is first run in lock step
(benchmarks/ab.py: one cycle on each server in turn, `--lockstep-cycles`), and the profile target
is judged on those one-connection figures, which machine drift cannot blur as it blurs wrk runs.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import httpx

from benchmarks import ab, dataset, machine, recording, report, servers, workloads, wrk
from benchmarks.workloads import EVERY, PAGE, SAMPLE, SOAK_MIX, WORKLOADS, Workload, page_ids, sample_ids
from benchmarks.wrk import Call

REPO = Path(__file__).resolve().parent.parent
PORT_BASE = 18950
# Ports of one slot (a dataset size, or the soak), from its base: hermes-server, upstream, upstream's
# mock model, the ceiling, the throwaway hermes-server the write answers are recorded from, then
# one hermes-server per compared version profile.
HERMES, UPSTREAM, CEILING, RECORDER, PROFILED = 0, 1, 3, 4, 5
PORTS_PER_SLOT = 5  # without compared profiles
CONNECTIONS = (1, 32)


def route_available(server: servers.Server, workload: Workload) -> bool:
    """False when hermes-server does not serve one of the calls yet (framework 404, not a JSON 404).

    The probe writes nothing: its body is not JSON (a 400) and its session does not exist (a 404).
    A `{}` body once created a session on the measured server alone, which then led its list
    page, so the changing list PATCHed an id the compared servers' copies lacked (404s)."""
    headers = {"Authorization": f"Bearer {server.key}", "Content-Type": "application/json"}
    for call in workload.calls:
        path = call.path.replace("{id}", "no-such-session-for-probe")
        answer = httpx.request(call.method, server.url + path, headers=headers, content=b"not json", timeout=10)
        if answer.text.startswith("404: Not Found"):
            return False
    return True


class Bench:
    """One benchmark run: options, scratch space and the results gathered so far."""

    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        self.workloads = workloads.select(args.routes)
        self.wrk = wrk.ensure_wrk()
        self.work = Path(tempfile.mkdtemp(prefix="hermes-bench-"))
        self.runs = 0
        self.results: dict[str, Any] = {"sizes": {}, "soak": {}}

    def log(self, text: str) -> None:
        print(text, file=sys.stderr, flush=True)

    def port(self, slot: int, which: int) -> int:
        return self.args.port_base + slot * (PORTS_PER_SLOT + len(self.args.compare_versions)) + which

    def start_hermes(self, home: Path, port: int, version: str | None = None) -> servers.Server:
        """hermes-server answering as `version` (default: the measured profile, --hermes-version)."""
        version = version or self.args.hermes_version
        server = servers.start_profile(home, port, version)
        if version in self.args.compare_versions:
            server.name = servers.profiled_name(version)
        return server

    def tag(self) -> str:
        """A run-unique prefix for the ids and titles wrk makes up."""
        self.runs += 1
        return f"r{int(time.time()) % 100000}x{self.runs}_"

    def drive(self, server: servers.Server, calls: list[Call], ids: list[str], connections: int,
              seconds: float, same_id: bool = False) -> wrk.Result:
        return wrk.run(server.url, calls, ids, tag=self.tag(), key=server.key, connections=connections,
                       seconds=seconds, wrk_path=self.wrk, same_id=same_id)

    def start_all(self, size: int, with_upstream: bool, slot: int, *, profiles: bool = True) -> list[servers.Server]:
        """hermes-server, then (with `profiles`) one per compared profile, then upstream; the caller stops them all."""
        home = self.work / f"hermes-{size}-{slot}"
        dataset.copy_to(dataset.cached(size), home)
        started = [self.start_hermes(home, self.port(slot, HERMES))]
        for i, version in enumerate(self.args.compare_versions if profiles else []):
            profiled = self.work / f"hermes-{size}-{slot}-{version}"
            dataset.copy_to(dataset.cached(size), profiled)
            started.append(self.start_hermes(profiled, self.port(slot, PROFILED + i), version))
        if with_upstream:
            up_home = self.work / f"upstream-{size}-{slot}"
            dataset.copy_to(dataset.cached(size, "upstream", self.args.oracle_venv), up_home)
            started.append(servers.start_upstream(up_home, self.port(slot, UPSTREAM), self.args.oracle_venv))
        return started

    def record(self, size: int, slot: int, hermes: servers.Server, routes: list[Workload],
               ids: list[str]) -> dict[str, recording.Answer]:
        """hermes-server's answers to every request the ceiling replays (writes on a throwaway copy)."""
        answers = recording.record_reads(hermes.url, hermes.key, routes, ids)
        if any(c.method != "GET" for w in routes for c in w.calls):
            home = self.work / f"record-{size}"
            dataset.copy_to(dataset.cached(size), home)
            recorder = self.start_hermes(home, self.port(slot, RECORDER))
            try:
                # a plain session (not a chain member or fork), like 45 of every 50 rotated ids
                plain = dataset.session_id(min(size - 1, size // 2 + 10))
                answers.update(recording.record_writes(recorder.url, recorder.key, routes, plain, self.tag() + "t1_1"))
            finally:
                recorder.stop()
                shutil.rmtree(home, ignore_errors=True)
        return answers

    def bench_size(self, size: int, slot: int) -> None:
        with_upstream = size in self.args.upstream_sizes and self.oracle
        started = self.start_all(size, with_upstream, slot)
        hermes = started[0]
        try:
            routes = [w for w in self.workloads if route_available(hermes, w)]
            ids = {SAMPLE: sample_ids(size), EVERY: sample_ids(size, spread=True), PAGE: page_ids(hermes)}
            replayed = [w for w in routes if w.ceiling]
            ceiling, answers = None, {}
            if replayed:
                answers = self.record(size, slot, hermes, replayed, ids[SAMPLE])
                ceiling = servers.start_ceiling({k: a.as_dict() for k, a in answers.items()}, self.work,
                                                self.port(slot, CEILING))
                started.append(ceiling)
                recording.check(ceiling.url, answers)
                self.log(f"  ceiling: all {len(answers)} recorded answers byte-identical to hermes-server's")
            # Before any wrk run: its creates give each server ids of its own, and the lock step's
            # cycles must find the same sessions on every server.
            lockstep = self.lockstep(size, [hermes, *(s for s in started if servers.is_profiled(s))], routes)
            per_route: dict[str, Any] = {}
            for route in routes:
                targets = [s for s in started if s is hermes or (s is ceiling and route.ceiling)
                           or (s.name == "upstream" and route.upstream) or servers.is_profiled(s)]
                per_route[route.name] = {str(c): self.measure(size, route, targets, ids[route.ids], c)
                                         for c in CONNECTIONS}
            self.results["sizes"][str(size)] = {"upstream": with_upstream, "routes": per_route,
                                                "ceiling_answers": len(answers),
                                                **({"lockstep": lockstep} if lockstep else {})}
        finally:
            for server in started:
                server.stop()

    def lockstep(self, size: int, compared: list[servers.Server], routes: list[Workload]) -> dict[str, Any]:
        """The compared profiles against the measured one in lock step (benchmarks/ab.py), at one
        connection: what the profile target is judged on, as wrk runs seconds apart cannot resolve
        10% on a shared machine. Nothing without --compare-versions or with --lockstep-cycles 0."""
        if len(compared) < 2 or not self.args.lockstep_cycles:
            return {}
        self.log(f"  {size:>7} lock step, {self.args.lockstep_cycles} cycles per route and server:")
        return ab.lockstep(compared, routes, size, self.args.lockstep_cycles, log=lambda line: self.log("    " + line))

    def measure(self, size: int, route: Workload, targets: list[servers.Server], ids: list[str],
                connections: int) -> dict[str, Any]:
        """Each server's figures for one route: `--rounds` runs, the servers in turn, the median kept
        (with every round's req/s beside it, to show the noise). Each round starts one server further
        on, so no server always runs right after the same one (a write route's last checkpoint, say)."""
        rounds: dict[str, list[dict[str, Any]]] = {server.name: [] for server in targets}
        for turn in range(self.args.rounds):
            for server in targets[turn % len(targets):] + targets[:turn % len(targets)]:
                offset = server.log_size()
                result = self.drive(server, list(route.calls), ids, connections, self.args.seconds,
                                    same_id=len(route.calls) > 1)
                cell = result.as_dict()
                if result.bad_status:
                    cell["refused"] = dict(server.refused_since(offset).most_common())
                if route.reported is not None:
                    cell["cycle_rps"], cell["rps"] = cell["rps"], round(result.rps * route.share, 1)
                rounds[server.name].append(cell)
                self.log(f"  {size:>7} {route.name:<16} c={connections:<3} {server.name:<20} "
                         f"{cell['rps']:9.1f} req/s  p50 {result.p50_ms:8.2f} ms  p99 {result.p99_ms:8.2f} ms"
                         + (f"  ERRORS {result.errors}+{result.bad_status}"
                            if result.errors or result.bad_status else "")
                         + "".join(f"; {count} × {line}" for line, count in cell.get("refused", {}).items()))
        row: dict[str, Any] = {}
        for name, cells in rounds.items():
            median = statistics.median_low(cell["rps"] for cell in cells)
            row[name] = next(cell for cell in cells if cell["rps"] == median)
            if len(cells) > 1:
                row[name] = {**row[name], "rounds_rps": [cell["rps"] for cell in cells]}
        return row

    def soak(self, size: int, slot: int) -> None:
        """A mixed load at 32 connections on fresh servers, sampling resident memory."""
        with_upstream = size in self.args.upstream_sizes and self.oracle
        ids = sample_ids(size, spread=True)
        # The soak measures memory of hermes-server and upstream only. Filtering profiled servers out
        # of the started list once left them running after the bench (never stopped).
        started = self.start_all(size, with_upstream, slot, profiles=False)
        try:
            routes = set(name for name in SOAK_MIX if route_available(started[0], WORKLOADS[name]))
            mix = [WORKLOADS[name].calls[0] for name in SOAK_MIX if name in routes]
            for server in started:
                before = server.rss_kb()[0]
                peak = [before]
                stop = threading.Event()

                def sample(server: servers.Server, peak: list[int], stop: threading.Event) -> None:
                    while not stop.wait(0.2):
                        peak.append(server.rss_kb()[0])

                sampler = threading.Thread(target=sample, args=(server, peak, stop), daemon=True)
                sampler.start()
                result = self.drive(server, mix, ids, 32, self.args.soak_seconds)
                stop.set()
                sampler.join()
                after, high_water = server.rss_kb()
                self.results["soak"][server.name] = {
                    "size": size, "seconds": self.args.soak_seconds, "start_mb": round(before / 1024, 1),
                    "end_mb": round(after / 1024, 1), "peak_mb": round(max(max(peak), high_water) / 1024, 1),
                    "load": result.as_dict(), "mix": [f"{c.method} {c.path}" for c in mix],
                }
                self.log(f"  soak {server.name}: {result.rps:.0f} req/s, RSS {before / 1024:.1f} → "
                         f"{after / 1024:.1f} MB, peak {max(max(peak), high_water) / 1024:.1f} MB")
        finally:
            for server in started:
                server.stop()

    def run(self) -> dict[str, Any]:
        self.oracle = servers.oracle_available(self.args.oracle_venv) and not self.args.no_upstream
        if not self.oracle and not self.args.no_upstream:
            self.log(f"bench: upstream comparison skipped (needs the oracle scripts in {servers.ORACLE_DIR}, "
                     f"or HERMES_ORACLE_DIR, and their virtualenv at {self.args.oracle_venv}: "
                     "../shared/oracle/setup.sh creates it)")
        self.results["machine"] = machine.describe()
        self.results["options"] = {
            "mode": "quick" if self.args.quick else "full", "sizes": self.args.sizes,
            "upstream_sizes": self.args.upstream_sizes if self.oracle else [],
            "seconds_per_run": self.args.seconds, "soak_seconds": self.args.soak_seconds,
            "connections": list(CONNECTIONS), "routes": [w.name for w in self.workloads],
            "hermes_version": self.args.hermes_version or "0.19.0", "compare_versions": self.args.compare_versions,
            "rounds": self.args.rounds, "lockstep_cycles": self.args.lockstep_cycles,
        }
        started = time.time()
        for size in self.args.sizes:
            dataset.cached(size)
            if self.oracle and size in self.args.upstream_sizes:
                dataset.cached(size, "upstream", self.args.oracle_venv)
        for slot, size in enumerate(self.args.sizes):
            self.log(f"bench: {size} sessions")
            self.bench_size(size, slot)
        if self.args.soak_seconds > 0:
            self.log(f"bench: {self.args.soak_seconds:.0f} s mixed soak at {self.args.soak_size} sessions")
            self.soak(self.args.soak_size, len(self.args.sizes))
        self.results["elapsed_seconds"] = round(time.time() - started)
        shutil.rmtree(self.work, ignore_errors=True)
        return self.results


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.run", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="1k and 10k sessions, 3 s runs, 10 s soak; no doc")
    parser.add_argument("--sizes", type=int, nargs="+", help="dataset sizes (sessions)")
    parser.add_argument("--seconds", type=float, help="seconds per wrk run")
    parser.add_argument("--soak-seconds", type=float, help="length of the mixed soak (0: no soak)")
    parser.add_argument("--soak-size", type=int, default=10_000, help="dataset size of the soak (default 10000)")
    parser.add_argument("--upstream-sizes", type=int, nargs="*", default=[10_000],
                        help="sizes at which upstream is measured too (default 10000)")
    parser.add_argument("--no-upstream", action="store_true", help="skip the upstream comparison")
    parser.add_argument("--hermes-version", metavar="VERSION",
                        help="the version profile hermes-server is measured as (default: the server's, 0.19.0)")
    parser.add_argument("--compare-versions", nargs="+", default=[], metavar="VERSION",
                        help="also measure a hermes-server of each of these profiles, interleaved; the report "
                             "gives each one's ratio to the measured profile")
    parser.add_argument("--rounds", type=int, default=1,
                        help="runs per route and server, servers in turn; the median is kept (default 1)")
    parser.add_argument("--lockstep-cycles", type=int, default=600, metavar="N",
                        help="with --compare-versions: cycles per route and server of the lock-step comparison "
                             "(benchmarks/ab.py) the profile target is judged on (default 600; 0: none)")
    parser.add_argument("--routes", nargs="+", metavar="NAME",
                        help=f"measure only these routes ({', '.join(WORKLOADS)}; `list-changing` works too); no doc")
    parser.add_argument("--port-base", type=int, default=PORT_BASE,
                        help=f"first of the loopback ports used ({PORTS_PER_SLOT} per size, plus the soak's; "
                             f"default {PORT_BASE})")
    parser.add_argument("--oracle-venv", type=Path, default=dataset.ORACLE_VENV,
                        help="virtualenv with hermes-agent 0.19.0 (default /tmp/hermes-oracle-venv)")
    parser.add_argument("--doc", type=Path, help="write the report here (full mode default: docs/benchmarks.md)")
    parser.add_argument("--render", type=Path, metavar="RESULTS_JSON",
                        help="measure nothing: write the report of a saved run (benchmarks/results/*.json) to --doc")
    args = parser.parse_args(argv)
    if args.sizes is None:
        args.sizes = [1000, 10_000] if args.quick else [1000, 10_000, 100_000]
    args.seconds = args.seconds or (3.0 if args.quick else 8.0)
    if args.soak_seconds is None:
        args.soak_seconds = 10.0 if args.quick else 30.0
    if args.rounds < 1:
        parser.error("--rounds must be at least 1")
    if args.lockstep_cycles < 0:
        parser.error("--lockstep-cycles must be 0 or more")
    if args.hermes_version in args.compare_versions:
        parser.error(f"--compare-versions {args.hermes_version} is the measured profile already")
    if args.routes:
        workloads.select(args.routes)  # an unknown name stops here, before any dataset is built
    if args.doc is None and not args.quick and not args.routes and not args.compare_versions:
        args.doc = REPO / "docs" / "benchmarks.md"
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.render:
        results = json.loads(args.render.read_text(encoding="utf-8"))
    else:
        results = Bench(args).run()
        out_dir = REPO / "benchmarks" / "results"
        out_dir.mkdir(parents=True, exist_ok=True)
        stamp = time.strftime("%Y%m%d-%H%M%S")
        (out_dir / f"{stamp}.json").write_text(json.dumps(results, indent=1), encoding="utf-8")
    text = report.render(results)
    print(text)
    if args.doc:
        args.doc.write_text(text, encoding="utf-8")
        print(f"bench: wrote {args.doc}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
