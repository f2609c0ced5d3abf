"""Render one run's results as docs/benchmarks.md: machine, targets, per-route tables, soak.

Also renders the result files of older runs (benchmarks/results/*.json): a figure
they lack shows as n/a or –.

The hand-written analysis (why a figure is what it is, what bounds it) lives in
benchmarks/analysis.md and is appended verbatim, so regenerating the figures
never loses it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from benchmarks.servers import profiled_name
from benchmarks.targets import PROFILE_GOAL, cell, figure, percent, profile_ratios, ratio, slower_at_more, targets, times
from benchmarks.workloads import WORKLOADS

ANALYSIS = Path(__file__).resolve().parent / "analysis.md"


# Marks the route name of a route that serves fewer requests per second at 32 connections than at 1.
SLOWER = "▼"


def _fmt(found: dict[str, Any] | None) -> list[str]:
    """req/s (⚠ when wrk saw socket errors or unexpected statuses), p50 and p99 of one run."""
    if found is None:
        return ["–", "–", "–"]
    flag = " ⚠" if found.get("errors") or found.get("bad_status") else ""
    return [f"{found['rps']:,.0f}{flag}", f"{found['p50_ms']:.2f}", f"{found['p99_ms']:.2f}"]


def _rps(found: dict[str, Any] | None) -> str:
    return "–" if found is None else f"{found['rps']:,.0f}"


def size_table(size: str, data: dict[str, Any], connections: list[int]) -> list[str]:
    """One row per route, every connection count side by side, then the routes that slow down."""
    lines = [f"### {int(size):,} sessions × 20 messages", ""]
    with_upstream = bool(data.get("upstream"))
    head = ["route"]
    for c in connections:
        head += [f"hs req/s @{c}", f"p50 ms @{c}", f"p99 ms @{c}"]
    for c in connections:
        head += [f"ceiling req/s @{c}", f"hs / ceiling @{c}"]
    if with_upstream:
        for c in connections:
            head += [f"upstream req/s @{c}", f"hs / upstream @{c}"]
    lines += ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    slower = slower_at_more(data, connections[0], connections[-1]) if len(connections) > 1 else []
    slow_names = {route for route, _, _ in slower}
    for route in data["routes"]:
        row = [f"{route} {SLOWER}" if route in slow_names else route]
        for c in connections:
            row += _fmt(cell(data, route, c, "hermes-server"))
        for c in connections:
            row += [_rps(cell(data, route, c, "ceiling")),
                    percent(ratio(figure(data, route, c), figure(data, route, c, "ceiling")))]
        if with_upstream:
            for c in connections:
                row += [_rps(cell(data, route, c, "upstream")),
                        times(ratio(figure(data, route, c), figure(data, route, c, "upstream")))]
        lines.append("| " + " | ".join(row) + " |")
    lines.append("")
    if slower:
        lines.append(f"{SLOWER} **Slower at {connections[-1]} connections than at {connections[0]}:** " + ", ".join(
            f"{route} ({many:,.0f} against {few:,.0f} req/s, {times(ratio(many, few))})" for route, few, many in slower)
            + ".")
    elif len(connections) > 1:
        lines.append(f"No route is slower at {connections[-1]} connections than at {connections[0]}.")
    if data.get("ceiling_answers"):
        lines.append("")
        lines.append(f"The ceiling replayed {data['ceiling_answers']} recorded answers, each checked byte-identical"
                     " (status, headers, body) to hermes-server's before it was measured.")
    elif any(cell(data, route, c, "ceiling") for route in data["routes"] for c in connections):
        lines.append("")
        lines.append("(A run from before the ceiling replayed whole answers: it served hermes-server's bodies for"
                     " list, get, messages and create only, without the security headers.)")
    return lines + [""]


def _spread(found: dict[str, Any] | None) -> str:
    """The rounds' req/s of one figure, lowest to highest (the median is the figure itself)."""
    rounds = (found or {}).get("rounds_rps")
    return "" if not rounds else f" ({min(rounds):,.0f}–{max(rounds):,.0f})"


def profiles_table(size: str, data: dict[str, Any], options: dict[str, Any]) -> list[str]:
    """Each compared profile's req/s per route beside the measured profile's, and their ratio."""
    base, versions = options["hermes_version"], options["compare_versions"]
    connections = options.get("connections", [1, 32])
    head = ["route", "conn", f"{base} req/s", *(part for v in versions for part in (f"{v} req/s", f"{v} / {base}"))]
    lines = [f"### Version profiles, {int(size):,} sessions", "", "| " + " | ".join(head) + " |",
             "|" + "---|" * len(head)]
    shares = {(v, c): profile_ratios(data, v, c) for v in versions for c in connections}
    for route in data["routes"]:
        for c in connections:
            row = [route, str(c), _rps(cell(data, route, c, "hermes-server")) + _spread(cell(data, route, c,
                                                                                            "hermes-server"))]
            for v in versions:
                found = cell(data, route, c, profiled_name(v))
                share = shares[(v, c)].get(route)
                mark = " **▼**" if share is not None and share < PROFILE_GOAL else ""
                row += [_rps(found) + _spread(found), percent(share) + mark]
            lines.append("| " + " | ".join(row) + " |")
    rounds = options.get("rounds", 1)
    lines += ["", f"Each figure is the median of {rounds} run{'s' if rounds != 1 else ''} of "
              f"{options['seconds_per_run']:g} s, the servers taking turns route by route"
              + (" (the lowest and highest round in brackets); a ratio is the median of the rounds' ratios,"
                 " each of two runs taken one after the other" if rounds > 1 else "")
              + f". **▼** marks a ratio under {PROFILE_GOAL:.0%}.", ""]
    return lines


def lockstep_table(size: str, data: dict[str, Any], options: dict[str, Any]) -> list[str]:
    """The lock-step figures of one size (benchmarks/ab.py): each route's median cycle on the measured
    server, and each compared profile's per-cycle speed and CPU against it."""
    base, versions = options["hermes_version"], options["compare_versions"]
    head = ["route", f"{base} µs", *(part for v in versions for part in (f"{v} speed", f"{v} CPU"))]
    lines = [f"### Version profiles in lock step, {int(size):,} sessions", "", "| " + " | ".join(head) + " |",
             "|" + "---|" * len(head)]
    for route, row in data["lockstep"].items():
        cells = [route, f"{row['hermes-server']['us']:,.0f}"]
        for v in versions:
            found = row.get(profiled_name(v))
            mark = " **▼**" if found and found["ratio"] < PROFILE_GOAL else ""
            cells += ["–", "–"] if found is None else [percent(found["ratio"]) + mark, percent(found["cpu"])]
        lines.append("| " + " | ".join(cells) + " |")
    lines += ["", f"One connection, {options.get('lockstep_cycles', '?')} cycles per route and server, one on each "
              "server in turn (benchmarks/ab.py): speed is the median over cycles of the measured server's time "
              "over the profile's, CPU the ratio of the processes' CPU over the same cycles (coarse: clock ticks). "
              f"The profile target is judged on speed; **▼** marks one under {PROFILE_GOAL:.0%}.", ""]
    return lines


def _route_notes(results: dict[str, Any]) -> list[str]:
    """What the changing variants measure, when the run has them."""
    names = {route for data in results["sizes"].values() for route in data["routes"]}
    cycles = [w for w in WORKLOADS.values() if w.reported is not None and w.name in names]
    if not cycles:
        return []
    return ["The changing variants, " + ", ".join(f"**{w.name}**" for w in cycles) + " (hermes-server only), interleave",
            "writes with the reads, so a response cache cannot answer them all from memory: wrk cycles a PATCH of a title",
            "(for list, a session on the page; for get, the very session read next) and the GET. Their req/s",
            "counts the GETs only (half the requests); their latency percentiles are of both calls.", ""]


def render(results: dict[str, Any]) -> str:
    m, o = results["machine"], results["options"]
    lines = [
        "# Benchmarks",
        "",
        "Generated by `make bench` (`python -m benchmarks.run`); every ratio below compares figures",
        "taken in this one run, on this machine. Regenerate rather than edit; the analysis at the",
        "end comes from `benchmarks/analysis.md`.",
        "",
        "## Machine and run",
        "",
        f"- {m['nproc']} CPUs ({m['cpu_model']}), {m['memory_gb']} GB RAM, {m['os']};"
        f" load average at start {', '.join(map(str, m['load_average_at_start']))}",
        f"- Python {m['python']}, SQLite {m['sqlite']}, uvicorn {m['uvicorn']} (uvloop {m['uvloop']},"
        f" httptools {m['httptools']}), Starlette {m['starlette']}, {m['wrk']}",
        f"- {o['mode']} mode, {m['date']}: {o['seconds_per_run']:.0f} s per wrk run, one wrk thread, "
        f"{' and '.join(map(str, o['connections']))} connections; sizes {', '.join(f'{s:,}' for s in o['sizes'])};"
        f" upstream at {', '.join(f'{s:,}' for s in o['upstream_sizes']) or 'no size (oracle absent)'};"
        f" {o['soak_seconds']:.0f} s soak; {results.get('elapsed_seconds', 0)} s in all",
        "- wrk, the servers and the ceiling share the same cores; figures are for comparison within",
        "  the run, not absolute capacity.",
        "",
        "## Targets",
        "",
        "| target | measured | met |",
        "|---|---|---|",
    ]
    for label, measured, met in targets(results):
        lines.append(f"| {label} | {measured} | {'n/a' if met is None else ('yes' if met else '**no**')} |")
    lines += ["", "## Per route", "",
              "Requests per second over the whole run; latency percentiles from wrk. `hs` is hermes-server;",
              "`@1` and `@32` are the connections. The ceiling is a bare Starlette app replaying, from memory,",
              "the answer hermes-server gave to that very request (status, headers and body; for the writes one",
              f"recorded answer per route). {SLOWER} flags a route slower at 32 connections than at 1.",
              "⚠ marks a run with socket errors or unexpected statuses. list is `?limit=50`; get and messages",
              "rotate over 256 sessions spread through the dataset; patch, fork and chat over all of them (so a",
              "chat turn's history stays at about 20 messages); create and patch use fresh ids and titles.",
              ""]
    lines += _route_notes(results)
    for size, data in results["sizes"].items():
        lines += size_table(size, data, o.get("connections", [1, 32]))
    if o.get("compare_versions"):
        lines += ["## Version profiles", "",
                  f"hermes-server as {o['hermes_version']} (the figures above) and as each compared profile",
                  "(`--compare-versions`), over copies of the same dataset, in the same run.", ""]
        for size, data in results["sizes"].items():
            lines += profiles_table(size, data, o)
            if data.get("lockstep"):
                lines += lockstep_table(size, data, o)
    if results.get("soak"):
        lines += _soak(results["soak"])
    if ANALYSIS.is_file():
        lines += [ANALYSIS.read_text(encoding="utf-8").rstrip(), ""]
    return "\n".join(lines)


def _soak(soak: dict[str, Any]) -> list[str]:
    lines = ["## Mixed soak", "",
             "Fresh servers, 32 connections, one wrk cycle of: " +
             ", ".join(next(iter(soak.values())).get("mix", [])) + ".", "",
             "| server | sessions | seconds | req/s | RSS at start MB | RSS at end MB | peak RSS MB |",
             "|---|---|---|---|---|---|---|"]
    for name, run in soak.items():
        lines.append(f"| {name} | {run['size']:,} | {run['seconds']:.0f} | {run['load']['rps']:,.0f} | "
                     f"{run['start_mb']} | {run['end_mb']} | {run['peak_mb']} |")
    return lines + [""]
