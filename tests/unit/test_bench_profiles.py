"""`python -m benchmarks.run --compare-versions`: each profile's ratio to the measured one, from a
synthetic run (no measuring), judged against issue 20's "no route more than 10% slower"."""

from __future__ import annotations

from typing import Any

from benchmarks import report
from benchmarks.run import parse_args
from benchmarks.targets import profile_ratios
from tests.unit.test_bench_report import cell, run, target_row


def with_profiles(rounds: dict[str, tuple[list[float], list[float]]]) -> dict[str, Any]:
    """The synthetic run, with a 0.21.2 server whose rounds' req/s are given per route (else the
    measured server's), and the measured server's rounds beside it."""
    results = run(fork_at_32=1000)
    for data in results["sizes"].values():
        for route, by_connections in data["routes"].items():
            ours, theirs = rounds.get(route, ([1000.0] * 3, [1000.0] * 3))
            for row in by_connections.values():
                row["hermes-server"] = {**cell(sorted(ours)[1]), "rounds_rps": ours}
                row["hermes-server@0.21.2"] = {**cell(sorted(theirs)[1]), "rounds_rps": theirs}
    results["options"].update(hermes_version="0.19.0", compare_versions=["0.21.2"], rounds=3)
    return results


def test_a_ratio_is_the_median_of_the_rounds_ratios() -> None:
    # Round 2 hit a burst of load on the measured server only: the medians (1000 vs 800) would say 80%.
    results = with_profiles({"get": ([1000.0, 500.0, 1000.0], [950.0, 800.0, 980.0])})
    assert profile_ratios(results["sizes"]["10000"], "0.21.2", 1)["get"] == 0.98


def test_a_profile_route_more_than_ten_percent_slower_fails_the_target() -> None:
    text = report.render(with_profiles({"messages": ([1000.0] * 3, [850.0, 860.0, 870.0])}))
    row = target_row(text, "0.21.2 profile")
    assert "slowest messages at 1 conn, 86%; below: messages" in row and row.endswith("| **no** |")
    assert "| messages | 1 | 1,000 (1,000–1,000) | 860 (850–870) | 86% **▼** |" in text


def test_a_profile_within_ten_percent_meets_it() -> None:
    text = report.render(with_profiles({"chat": ([1000.0] * 3, [930.0, 940.0, 950.0])}))
    assert target_row(text, "0.21.2 profile").endswith("| yes |")
    assert "% **▼** |" not in text


def test_a_run_without_profiles_has_no_profile_rows() -> None:
    text = report.render(run(fork_at_32=1000))
    assert not [line for line in text.splitlines() if line.startswith("| 0.21.2 profile")]
    assert "### Version profiles" not in text


def test_the_options() -> None:
    args = parse_args(["--quick", "--hermes-version", "0.20.4", "--compare-versions", "0.21.2", "--rounds", "3"])
    assert (args.hermes_version, args.compare_versions, args.rounds, args.doc) == ("0.20.4", ["0.21.2"], 3, None)
    assert parse_args(["--compare-versions", "0.20.4"]).doc is None  # a comparison never overwrites the doc


def with_lockstep(speeds: dict[str, float]) -> dict[str, Any]:
    """The synthetic run, its wrk rounds saying 80% for every route (blurred), plus lock-step figures
    of 0.21.2 at every size: `speeds` by route, else as fast as the measured server."""
    results = with_profiles({route: ([1000.0] * 3, [800.0] * 3) for route in ("list", "get", "messages")})
    for data in results["sizes"].values():
        data["lockstep"] = {route: {"hermes-server": {"us": 250.0, "ratio": 1.0, "cpu": 1.0},
                                    "hermes-server@0.21.2": {"us": 250.0 / speeds.get(route, 1.0),
                                                             "ratio": speeds.get(route, 1.0), "cpu": 0.97}}
                            for route in data["routes"]}
    results["options"]["lockstep_cycles"] = 600
    return results


def test_the_lock_step_figures_judge_the_profile_target_where_the_run_has_them() -> None:
    text = report.render(with_lockstep({"list": 0.95}))
    row = target_row(text, "0.21.2 profile")
    assert "(lock step, 1 conn)" in row and "slowest list at 1,000 sessions, 95%" in row and row.endswith("| yes |")
    assert "### Version profiles in lock step, 10,000 sessions" in text
    assert "| list | 250 | 95% | 97% |" in text


def test_a_route_slower_in_lock_step_fails_it_at_any_size() -> None:
    results = with_lockstep({})
    results["sizes"]["1000"]["lockstep"]["get"]["hermes-server@0.21.2"]["ratio"] = 0.85
    row = target_row(report.render(results), "0.21.2 profile")
    assert "slowest get at 1,000 sessions, 85%; below: get (1,000)" in row and row.endswith("| **no** |")
    assert parse_args(["--compare-versions", "0.21.2"]).lockstep_cycles == 600
