"""Issue 14's targets, checked against one run's results: one row per target, with its figures.

A row is met only when every figure it names was measured and reaches its goal; one
figure that misses makes it "not met" even if another is missing; otherwise a missing
figure leaves it "n/a". Ratio rows use the 10k dataset; a run without it (a quick one
on 1k, say) is checked on the size it has, and the row says which.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from benchmarks.servers import profiled_name

RATIO_SIZE = "10000"
Row = tuple[str, str, bool | None]
Part = tuple[str, bool | None]


def cell(data: dict[str, Any] | None, route: str, connections: int, server: str) -> dict[str, Any] | None:
    """One wrk figure set of a size's results, or None when that run did not happen."""
    if not data:
        return None
    return data.get("routes", {}).get(route, {}).get(str(connections), {}).get(server)


def figure(data: dict[str, Any] | None, route: str, connections: int, server: str = "hermes-server",
           name: str = "rps") -> float | None:
    found = cell(data, route, connections, server)
    return None if found is None else found.get(name)


def ratio(a: float | None, b: float | None) -> float | None:
    return a / b if a is not None and b else None


def times(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.2f}×"


def percent(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.0%}"


def slower_at_more(data: dict[str, Any], low: int = 1, high: int = 32) -> list[tuple[str, float, float]]:
    """(route, req/s at `low`, req/s at `high`) of every hermes-server route that loses throughput."""
    found = []
    for route in data.get("routes", {}):
        few, many = figure(data, route, low), figure(data, route, high)
        if few is not None and many is not None and many < few:
            found.append((route, few, many))
    return found


def _part(text: str, value: float | None, ok: Callable[[float], bool], fmt: Callable[[float | None], str]) -> Part:
    """`text` with the formatted figure in its `{}`, and whether the figure reaches its goal."""
    return text.format(fmt(value)), None if value is None else ok(value)


def _row(label: str, parts: list[Part]) -> Row:
    verdicts = [ok for _, ok in parts]
    met = False if False in verdicts else (None if None in verdicts else True)
    return label, "; ".join(text for text, _ in parts), met


def _versus(data: dict[str, Any] | None, route: str, other: str, goal: float, *conns: int) -> list[Part]:
    """hermes-server's req/s as a share of `other`'s, at each of `conns`, against `goal`."""
    fmt = percent if other == "ceiling" else times
    text = "{} of ceiling" if other == "ceiling" else "{} " + other
    return [_part(f"{text} at {c} conn", ratio(figure(data, route, c), figure(data, route, c, other)),
                  lambda v: v >= goal, fmt) for c in conns]


def _ratio_size(sizes: dict[str, Any]) -> str | None:
    if RATIO_SIZE in sizes:
        return RATIO_SIZE
    with_upstream = [s for s, d in sizes.items() if d.get("upstream")]
    return (with_upstream or list(sizes) or [None])[0]


def targets(results: dict[str, Any]) -> list[Row]:
    """(target, measured, met) for each row of issue 14's table; met is None when not measured."""
    sizes = results["sizes"]
    key = _ratio_size(sizes)
    data = sizes.get(key) if key else None
    at = "" if key in (RATIO_SIZE, None) else f" [at {int(key):,} sessions: no 10k run]"
    return [
        _row("list (limit 50): ≥ 60% of its ceiling at 1 conn; ≥ 100× upstream" + at,
             _versus(data, "list", "ceiling", 0.6, 1) + _versus(data, "list", "upstream", 100, 1, 32)),
        _row("get: ≥ 90% of its ceiling at 1 conn, ≥ 70% at 32" + at,
             _versus(data, "get", "ceiling", 0.9, 1) + _versus(data, "get", "ceiling", 0.7, 32)),
        _row("messages: ≥ 60% of its ceiling at 1 and 32 conn" + at, _versus(data, "messages", "ceiling", 0.6, 1, 32)),
        _row("create: ≥ 3× upstream at 1 conn" + at, _versus(data, "create", "upstream", 3, 1)),
        _row("patch: ≥ 3× upstream at 1 conn" + at, _versus(data, "patch", "upstream", 3, 1)),
        _row("fork: ≥ 4× upstream; p99 ≤ 10 ms at 1 conn" + at,
             _versus(data, "fork", "upstream", 4, 1, 32)
             + [_part("p99 {} at 1 conn", figure(data, "fork", 1, name="p99_ms"), lambda v: v <= 10,
                      lambda v: "n/a" if v is None else f"{v:.2f} ms")]),
        _every_route(data, at),
        _flat_list(sizes),
        _soak(results.get("soak", {})),
        *_profiles(data, results["options"], at, sizes),
    ]


# Issue 20: no route of a newer version profile more than 10% slower than the measured (0.19.0) one.
PROFILE_GOAL = 0.9


def profile_ratios(data: dict[str, Any] | None, version: str, connections: int) -> dict[str, float]:
    """Each route's req/s under `version`'s profile as a share of the measured profile's, at `connections`.

    With several rounds, the median of each round's ratio: the two servers of one round ran one
    after the other, so a burst of load from elsewhere on the machine falls on both or on neither."""
    found = {}
    for route in (data or {}).get("routes", {}):
        ours, theirs = cell(data, route, connections, "hermes-server"), cell(data, route, connections,
                                                                              profiled_name(version))
        if ours is None or theirs is None:
            continue
        pairs = list(zip(theirs.get("rounds_rps", []), ours.get("rounds_rps", []), strict=False))
        shares = [ratio(a, b) for a, b in pairs] if pairs else [ratio(theirs["rps"], ours["rps"])]
        known = sorted(share for share in shares if share is not None)
        if known:
            found[route] = known[len(known) // 2] if len(known) % 2 else (known[len(known) // 2 - 1]
                                                                          + known[len(known) // 2]) / 2
    return found


def lockstep_ratios(sizes: dict[str, Any], version: str) -> list[tuple[float, str, str]]:
    """(per-cycle speed against the measured profile, route, size) of every lock-step figure of
    `version` (benchmarks/ab.py), at every size measured."""
    name = profiled_name(version)
    return [(row[name]["ratio"], route, size) for size, data in sizes.items()
            for route, row in (data or {}).get("lockstep", {}).items() if name in row]


def _profiles(data: dict[str, Any] | None, options: dict[str, Any], at: str,
              sizes: dict[str, Any] | None = None) -> list[Row]:
    """One row per compared profile: its slowest route against the measured profile. Judged on
    the lock-step figures where the run has them (one connection, every size), else on the wrk
    rounds' ratios (which a shared machine blurs by ±15%)."""
    rows = []
    for version in options.get("compare_versions", []):
        stepped = lockstep_ratios(sizes or {}, version)
        if stepped:
            label = (f"{version} profile: every route ≥ {PROFILE_GOAL:.0%} of {options['hermes_version']}'s speed "
                     "(lock step, 1 conn)")
            share, route, size = min(stepped)
            below = sorted({f"{r} ({int(z):,})" for s, r, z in stepped if s < PROFILE_GOAL})
            measured = (f"slowest {route} at {int(size):,} sessions, {percent(share)}"
                        + (f"; below: {', '.join(below)}" if below else ""))
            rows.append((label, measured, share >= PROFILE_GOAL))
            continue
        label = f"{version} profile: every route ≥ {PROFILE_GOAL:.0%} of {options['hermes_version']}'s req/s" + at
        shares = [(share, route, c) for c in options.get("connections", [1, 32])
                  for route, share in profile_ratios(data, version, c).items()]
        if not shares:
            rows.append((label, "not measured", None))
            continue
        share, route, c = min(shares)
        below = sorted({r for s, r, _ in shares if s < PROFILE_GOAL})
        measured = f"slowest {route} at {c} conn, {percent(share)}" + (f"; below: {', '.join(below)}" if below else "")
        rows.append((label, measured, share >= PROFILE_GOAL))
    return rows


def _every_route(data: dict[str, Any] | None, at: str) -> Row:
    label = "every route: throughput at 32 conn ≥ at 1 conn" + at
    measured = [r for r in (data or {}).get("routes", {}) if figure(data, r, 1) is not None
                and figure(data, r, 32) is not None]
    if not measured:
        return label, "not measured", None
    slower = slower_at_more(data or {})
    if not slower:
        return label, f"all {len(measured)} routes hold or gain", True
    return label, "slower at 32: " + ", ".join(f"{r} ({many:,.0f} < {few:,.0f} req/s)" for r, few, many in slower), False


def _flat_list(sizes: dict[str, Any]) -> Row:
    small, large = figure(sizes.get("1000"), "list", 1, name="p50_ms"), figure(sizes.get("100000"), "list", 1, name="p50_ms")
    measured = "not measured" if None in (small, large) else \
        f"p50 at 1 conn {large:.2f} ms at 100k, {small:.2f} ms at 1k: {times(ratio(large, small))}"
    grown = ratio(large, small)
    return "list at 100k sessions: p50 ≤ 1.2× the p50 at 1k", measured, None if grown is None else grown <= 1.2


def _soak(soak: dict[str, Any]) -> Row:
    ours = soak.get("hermes-server")
    label = "peak RSS, 30 s mixed soak: ≤ 50 MB"
    if ours is None:
        return label, "not measured", None
    short = "" if ours["seconds"] >= 30 else f" (a {ours['seconds']:.0f} s soak, not 30 s)"
    return (label, f"{ours['peak_mb']} MB peak (start {ours['start_mb']} MB) at {ours['size']:,} sessions{short}",
            ours["peak_mb"] <= 50)
