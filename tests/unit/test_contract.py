"""The contract corpus (hermes_server/contract/) as data: its counts, its names, its rows, its masks.

The oracle tools play the corpus with an empty prefix, so its step counts are the tools' counts
(docs/conformance.md); `verify` plays it with a prefix on a server that matters, so every step it
may send names only what the run itself created or what cannot exist.
"""

from __future__ import annotations

import json
import posixpath
import re
from pathlib import Path
from typing import Any
from urllib.parse import unquote

import pytest

from hermes_server.cli.verify import nearest
from hermes_server.contract.masks import ANYTHING, json_shape
from hermes_server.contract.play import Played, groups
from hermes_server.contract.rows import DEVIATIONS, RELEASE_ROWS, Difference, release_rows
from hermes_server.contract.steps import Names, Need, Step
from hermes_server.contract.suites import BY_NAME, SUITES
from hermes_server.contract.verify import Reference, real_model, view
from hermes_server.contract.wire import Answer, Endpoint
from hermes_server.domain.profiles import PROFILES

ROOT = Path(__file__).resolve().parents[2]
# The oracle tools' counts (docs/conformance.md), and the probes oracle_diff.py plays after its 358.
COUNTS = {"probes": 11, "sessions": 364, "chat": 91, "completions": 84, "jobs": 104, "runs": 126}
PREFIX = "verify-0a1b2c-se-"
VERIFY_MEETS = frozenset({Need.WRITES, Need.CHAT})


def test_each_suite_has_the_oracle_tools_count() -> None:
    assert {suite.name: len(suite.scenarios(Names())) for suite in SUITES} == COUNTS


@pytest.mark.parametrize("suite", SUITES, ids=lambda s: s.name)
def test_a_prefix_changes_names_not_the_steps(suite: Any) -> None:
    bare, named = suite.scenarios(Names()), suite.scenarios(Names(PREFIX))
    assert [(s.name, s.method, s.needs, s.deviation) for s in bare] == \
        [(s.name, s.method, s.needs, s.deviation) for s in named]
    assert len({step.name for step in bare}) == len(bare), "step names are unique within a suite"


@pytest.mark.parametrize("tool", sorted({suite.oracle_tool for suite in SUITES}))
def test_the_oracle_tools_play_the_corpus(tool: str) -> None:
    source = (ROOT / tool).read_text()
    assert not re.search(r"def build_(cases|steps)", source), f"{tool} holds scenarios of its own"
    played = {suite.name for suite in SUITES if f'BY_NAME["{suite.name}"]' in source}
    assert played == {suite.name for suite in SUITES if suite.oracle_tool == tool}


def test_every_deviation_a_step_names_is_a_row_of_the_differences_page() -> None:
    page = (ROOT / "docs" / "differences.md").read_text()
    named = {step.deviation for suite in SUITES for step in suite.scenarios(Names()) if step.deviation}
    assert named <= set(DEVIATIONS)
    assert all(f"| {row} " in page or f"| {row} \"" in page for row in DEVIATIONS)
    # D7 needs a storage failure that no request can cause; every other row is reached.
    assert set(DEVIATIONS) - named == {"D7"}


def test_every_release_row_is_a_row_of_the_versions_page() -> None:
    rows = {line.split(" | ")[0][2:] for line in (ROOT / "docs" / "versions.md").read_text().splitlines()
            if line.startswith("| ")}
    for row in RELEASE_ROWS:
        assert row.behaviour in rows, row.behaviour
        assert row.since in PROFILES, row.behaviour


def _names_in(step: Step) -> list[str]:
    """What a step names that could be someone's: session ids and titles, job names, conversation
    names, session keys, idempotency keys, ids in a session path."""
    found = []
    path = posixpath.normpath(step.path.split("?")[0].split("#")[0])  # dot segments, as a server resolves them
    if path.startswith("/api/sessions/"):
        segment = unquote(path.split("/")[3], errors="replace")
        if segment and not segment.startswith("{") and segment != "..":
            found.append(segment)
    for name, value in step.headers:
        if name.lower() in ("x-hermes-session-id", "x-hermes-session-key", "idempotency-key"):
            text = value.decode() if isinstance(value, bytes) else value
            found.append(text)
    body: Any = step.body
    if isinstance(body, bytes):
        try:
            body = json.loads(body)
        except (ValueError, RecursionError):  # not JSON, or the deep-nesting step
            body = None
    if isinstance(body, dict):
        for key in ("id", "session_id", "title", "name", "conversation"):
            value = body.get(key)
            if isinstance(value, str):
                found.append(value)
    blank = re.compile(r"^[\s\u200b\x00-\x1f\x7f-\x9f]*$")
    return [name for name in found if not blank.match(name)]


@pytest.mark.parametrize("suite", SUITES, ids=lambda s: s.name)
def test_verify_names_only_what_its_run_creates(suite: Any) -> None:
    """Every step `verify` may send names things with the run's prefix (or a whitespace-padded
    one, which the server trims to it): it never reaches, by name, anything of the server's own."""
    names = Names(PREFIX)
    for step in suite.scenarios(names):
        if step.needs <= VERIFY_MEETS:
            for name in _names_in(step):
                assert PREFIX in name, f"{suite.name}: {step.name} names {name!r}"


def test_verify_never_deletes_or_replaces_what_it_cannot_name() -> None:
    for suite in SUITES:
        for step in suite.scenarios(Names(PREFIX)):
            if step.needs <= VERIFY_MEETS and step.method in ("DELETE", "PUT"):
                assert step.path.count("/") >= 3, f"{suite.name}: {step.name} {step.method} {step.path}"


def test_unknown_ids_are_drawn_from_the_prefix() -> None:
    assert Names().unknown("0123456789ab") == "0123456789ab"
    drawn = Names(PREFIX).unknown("0123456789ab")
    assert len(drawn) == 12 and drawn != "0123456789ab" and drawn == Names(PREFIX).unknown("0123456789ab")


def test_fill_counts_the_prefix_in_the_length() -> None:
    assert Names(PREFIX).fill("x", 257) == PREFIX + "x" * (257 - len(PREFIX))
    assert len(Names(PREFIX).fill("x", 257)) == 257


def test_a_shape_keeps_keys_and_types_and_lets_empty_lists_and_nulls_match_anything() -> None:
    assert json_shape({"a": 1, "b": [{"x": 1, "y": 2}], "c": None}) == \
        {"a": "number", "b": ("list", frozenset({("x", "y")})), "c": "str"}
    assert json_shape([]) == ("list", frozenset({"str"}))
    assert json_shape([]) is ANYTHING
    assert json_shape({"a": {"b": 1}}, depth=1) == {"a": "object"}


def test_a_difference_names_its_release_rows() -> None:
    step = Step("get", "GET", "/api/sessions/x")
    profile = {"status": 200, "body": json.dumps({"session": {"id": "x", "model": "hermes-agent"}})}
    newer = {"status": 200, "body": json.dumps({"session": {"id": "x", "model": None, "pinned": False}})}
    rows = {row.behaviour for row in release_rows(step, Difference.of(profile, newer))}
    assert rows == {"`POST /api/sessions` `model`", "session object `pinned`, `archived`, `hidden`"}
    unauthorised = Difference.of({"status": 401, "body": {"error": {"code": "invalid_api_key"}}},
                                 {"status": 401, "body": {"error": {"code": "gateway_auth_failed"}}})
    assert [row.behaviour for row in release_rows(step, unauthorised)] == ["401 on a missing or wrong key"]


@pytest.mark.parametrize(("claims", "profile"), [
    ("0.19.0", "0.19.0"), ("0.21.2", "0.21.2"), ("0.21.6", "0.21.2"), ("0.20.0", "0.20.4"), ("0.22.1", "0.21.2"),
    ("0.18.3", "0.19.0"), ("nonsense", "0.19.0"), (None, "0.19.0"),
])
def test_the_default_profile_is_the_release_health_names_or_the_nearest(claims: str | None, profile: str) -> None:
    assert nearest(claims)[0] == profile


def test_a_target_url_is_http_and_nothing_more() -> None:
    assert Endpoint.parse("http://127.0.0.1:8642/").url == "http://127.0.0.1:8642"
    assert Endpoint.parse("https://h.example/hermes").prefix == "/hermes"
    for bad in ("127.0.0.1:8642", "ftp://x", "http://", "http://x/?q=1"):
        with pytest.raises(ValueError):
            Endpoint.parse(bad)


def _answer(body: dict[str, Any]) -> Answer:
    return Answer(200, {"content-type": "application/json"}, json.dumps(body).encode())


def test_a_real_model_is_told_from_a_mock_by_its_words() -> None:
    turn = Step("turn", "POST", "/api/sessions/x/chat", needs=frozenset({Need.CHAT}))
    mock = [Played(turn, {"target": _answer({"content": "MOCK-REPLY to: hi [n=1]"})})]
    real = [Played(turn, {"target": _answer({"content": "Hello! How can I help?"})})]
    assert not real_model(mock, "target")
    assert real_model(real, "target")
    assert not real_model([], "target")


def test_with_a_real_model_its_words_and_configuration_are_masked() -> None:
    step = Step("turn", "POST", "/v1/responses")
    form = {"status": 200, "body": {"model": "big-model", "output": [{"content": [{"text": "Hi"}]}],
                                    "job": {"model_snapshot": None}, "id": 7}}
    def normalise(answer: Answer) -> dict[str, Any]:
        return form

    seen = view(step, _answer({}), normalise, text=True)  # type: ignore[arg-type]
    assert seen["body"]["model"] == "<model>" and seen["body"]["output"] == "<output>"
    assert seen["body"]["job"]["model_snapshot"] == "<model_snapshot>" and seen["body"]["id"] == "<row>"
    assert view(step, _answer({}), normalise, text=False)["body"]["model"] == "big-model"  # type: ignore[arg-type]


def test_a_retry_group_plays_together() -> None:
    steps = [Step("a", "GET", "/"), Step("b", "GET", "/", retry="g"), Step("c", "GET", "/", retry="g"),
             Step("d", "GET", "/")]
    assert [[s.name for s in group] for group in groups(steps)] == [["a"], ["b", "c"], ["d"]]


def test_references_cover_every_served_release_both_ways() -> None:
    from hermes_server.cli.verify import check  # noqa: F401 - the command builds them from PROFILES
    wanted = [Reference(version, quirks) for version in PROFILES for quirks in (True, False)]
    assert len({ref.name for ref in wanted}) == 2 * len(PROFILES)


def test_probes_write_nothing_on_any_release() -> None:
    """The read probes run without --write: only reads, and refusals of unknown ids."""
    for step in BY_NAME["probes"].scenarios(Names(PREFIX)):
        assert Need.WRITES not in step.needs
        assert step.method == "GET" or PREFIX in step.path or "run_nope" in step.path, step.name


def test_the_report_says_when_a_target_answers_like_another_release_than_it_claims() -> None:
    from hermes_server.contract.report import Run, as_json, text
    from hermes_server.contract.verify import Finding, Outcome

    step = Step("wrong key", "GET", "/api/sessions", behaviour="the 401 envelope")
    profile = {"status": 401, "body": {"error": {"code": "invalid_api_key"}}}
    newer = {"status": 401, "body": {"error": {"code": "gateway_auth_failed"}}}
    difference = Difference.of(profile, newer)
    finding = Finding("sessions", step, profile, newer, difference, [Reference("0.21.2", True)], None, ["0.21.2"],
                      release_rows(step, difference))
    run = Run("http://h:1", "0.19.0", "0.19.0", "its /health names 0.19.0", [], "verify-0a1b2c-",
              [Reference("0.19.0", True)], Outcome(findings=[finding]))
    shown = text(run)
    assert "the target answers like 0.21.2, not 0.19.0 as its /health claims, on 1 step(s)" in shown
    assert "| the 401 envelope | sessions: wrong key |" in shown and "0.20.4 row: 401 on a missing or wrong key" in shown
    data = as_json(run)
    assert data["answers_like"] == {"0.21.2": 1} and data["result"] == {"drift": 1, "explained": 1, "unexplained": 0,
                                                                      "exit": 1}
    assert data["drift"][0]["release_rows"] == [{"behaviour": "401 on a missing or wrong key", "since": "0.20.4",
                                                 "unit": "gateway_auth"}]
