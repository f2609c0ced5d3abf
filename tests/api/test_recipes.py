"""Every recipe in docs/testing-connectors.md, run as written against a real server.

The page has one recipe per row of seed 003's "Recover by lifecycle phase" table and
seed 000's "Handle provider failures" table; this module checks that too, so a row
cannot be dropped and a recipe cannot drift from what the server does.

Each recipe is then audited as a connector's suite audits itself (the kit's
`assert_clean()`, what `@pytest.mark.hermes_audit` runs): a recipe shows a careful
connector, so its traffic has no error finding, except the deliberately wrong ones.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
import pytest

from hermes_server.testkit import FixtureClient
from tests.support.server import KEY, RunningServer, start_server
from tests.support.sse import parse_frames

pytestmark = pytest.mark.in_process

DOC = Path(__file__).resolve().parents[2] / "docs" / "testing-connectors.md"

# The first column of the two seed tables, verbatim.
SEED_ROWS = {
    "003": [
        "Create result lost", "Chat result lost", "Returned session ID changed", "`404 session_not_found`",
        "Fork returned `400` or delivery failed", "Patch result uncertain", "Delete waits for approval",
        "Delete result uncertain", "`503 session_db_unavailable`",
    ],
    "000": [
        "`400 invalid_session_id`", "`400 invalid_title`", "`400 unsupported_session_field`",
        "`400 missing_message` or content error", "`401 invalid_api_key`", "`403` for `X-Hermes-Session-Key`",
        "`404 session_not_found`", "`409 session_exists`", "`413 body_too_large`", "`503 session_db_unavailable`",
        "Connector timeout or transport failure",
    ],
}

_BLOCK = re.compile(r"^### (?P<name>[a-z0-9-]+): .*?^```json recipe\n(?P<json>.*?)^```", re.M | re.S)
TRANSPORT = {
    "reset": (httpx.RemoteProtocolError, httpx.ReadError, httpx.WriteError),
    "timeout": (httpx.TimeoutException,),
}


# The recipes that show a wrong connector on purpose: the audit's own `audit-<rule>` ones (their
# `-clean` twins are careful). Their traffic must fail the audit when it has an error finding.
def deliberately_wrong(name: str) -> bool:
    return name.startswith("audit-") and not name.endswith("-clean")


def recipes() -> list[tuple[str, dict[str, Any]]]:
    return [(m["name"], json.loads(m["json"])) for m in _BLOCK.finditer(DOC.read_text(encoding="utf-8"))]


def test_one_recipe_per_seed_row() -> None:
    found = [(recipe["table"], recipe["row"]) for _, recipe in recipes()]
    assert len(found) == len(set(found))
    for table, rows in SEED_ROWS.items():
        assert [row for t, row in found if t == table] == rows
    assert DOC.read_text().count("```json recipe") == len(found)  # no block the pattern missed


@pytest.fixture(scope="module")
def servers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Callable[..., RunningServer]]:
    """One --fixture-api server per distinct set of extra flags and agent script, started when a
    recipe first needs it."""
    started: dict[tuple[str, ...], RunningServer] = {}

    def get(flags: tuple[str, ...], script: Any = None) -> RunningServer:
        name = (*flags, json.dumps(script))
        if name not in started:
            home = tmp_path_factory.mktemp("recipes") / "home"
            key = None if "--no-auth" in flags else KEY
            extra = [f for f in flags if f != "--no-auth"]
            if script is not None:
                path = home.parent / "script.json"
                path.write_text(json.dumps(script))
                extra += ["--agent", "script", "--agent-script", str(path)]
            started[name] = start_server(home, "--fixture-api", *extra, key=key)
        return started[name]

    yield get
    for srv in started.values():
        srv.stop()


def matches(expected: Any, actual: Any) -> bool:
    """Objects: the listed fields match; lists: same length, element by element; else equal."""
    if isinstance(expected, dict):
        return isinstance(actual, dict) and all(k in actual and matches(v, actual[k]) for k, v in expected.items())
    if isinstance(expected, list):
        return isinstance(actual, list) and len(actual) == len(expected) and all(map(matches, expected, actual))
    if isinstance(expected, bool) or expected is None:
        return actual is expected
    return expected == actual and not isinstance(actual, bool)


def substitute(value: Any, saved: dict[str, str]) -> Any:
    if isinstance(value, str):
        return re.sub(r"\{(\w+)\}", lambda m: saved.get(m[1], m[0]), value)
    if isinstance(value, dict):
        return {k: substitute(v, saved) for k, v in value.items()}
    if isinstance(value, list):
        return [substitute(v, saved) for v in value]
    return value


def dig(payload: Any, dotted: str) -> Any:
    for part in dotted.split("."):
        payload = payload[int(part)] if isinstance(payload, list) else payload[part]
    return payload


def send(client: httpx.Client, step: dict[str, Any], saved: dict[str, str]) -> tuple[httpx.Response | None, bytes, str | None]:
    """Make one step's request; returns the response (None if the transport failed), body bytes, failure kind."""
    method, target = substitute(step["send"], saved).split(" ", 1)
    kwargs: dict[str, Any] = {"headers": substitute(step.get("headers", {}), saved),
                              "timeout": step.get("timeout_ms", 30_000) / 1000}
    if "body" in step:
        kwargs["json"] = substitute(step["body"], saved)
    elif "body_bytes" in step:
        kwargs["content"] = b"x" * step["body_bytes"]
    raw = b""
    try:
        if step.get("stream"):
            with client.stream(method, target, **kwargs) as response:
                for chunk in response.iter_raw():
                    raw += chunk
        else:
            response = client.request(method, target, **kwargs)
            raw = response.content
    except httpx.TransportError as exc:
        kind = next((name for name, kinds in TRANSPORT.items() if isinstance(exc, kinds)), type(exc).__name__)
        return None, raw, kind
    return response, raw, None


def check_step(client: httpx.Client, step: dict[str, Any], saved: dict[str, str], where: str) -> None:
    """Make one step's request (after its `after_ms`) and check what it expects."""
    time.sleep(step.get("after_ms", 0) / 1000)
    response, raw, failure = send(client, step, saved)
    expect = substitute(step["expect"], saved)
    assert failure == expect.get("transport_error"), f"{where}: transport {failure!r}"
    if "events" in expect:
        complete = raw[: raw.rfind(b"\n\n") + 2] if b"\n\n" in raw else b""
        assert [f.name for f in parse_frames(complete) if f.name] == expect["events"], where
    if response is None:
        return
    assert response.status_code == expect.get("status", response.status_code), f"{where}: {response.text}"
    if "json" in expect:
        assert matches(expect["json"], response.json()), f"{where}: {response.text}"
    for header, value in expect.get("headers", {}).items():
        assert response.headers.get(header) == value, f"{where}: {header}"
    for key, path in step.get("save", {}).items():
        saved[key] = dig(response.json(), path)


def run_recipe(client: httpx.Client, name: str, recipe: dict[str, Any], key: str | None) -> None:
    """Load the recipe's state on the server `client` talks to, then make and check its steps.
    (tests/testkit/test_audit_recipes.py runs the same through the pytest plugin.)"""
    assert client.post("/_fixture/reset", json={"to": "empty"}).status_code == 200
    if "seed" in recipe:
        assert client.post("/_fixture/seed", json=recipe["seed"]).status_code == 200
    if "faults" in recipe:
        assert client.put("/_fixture/faults", json={"faults": recipe["faults"]}).status_code == 200
    client.delete("/_fixture/requests")  # the journal holds only the recipe's own requests
    # `{key}` is the server's key, for headers other than the bearer one (herm.run's x-api-key).
    saved: dict[str, str] = {"key": key or ""}
    for number, step in enumerate(recipe["steps"], 1):
        if "wait_ms" in step:
            time.sleep(step["wait_ms"] / 1000)
            continue
        if "parallel" in step:  # sent together, each after its own after_ms
            with ThreadPoolExecutor(len(step["parallel"])) as pool:
                for done in [pool.submit(check_step, client, sub, saved, f"{name} step {number} ({sub['send']})")
                             for sub in step["parallel"]]:
                    done.result()
            continue
        check_step(client, step, saved, f"{name} step {number} ({step['send']})")


@pytest.mark.parametrize("name, recipe", recipes(), ids=[name for name, _ in recipes()])
def test_recipe(servers, name: str, recipe: dict[str, Any]) -> None:
    srv = servers(tuple(recipe.get("server", ())), recipe.get("script"))
    run_recipe(srv.client, name, recipe, srv.key)
    audit_recipe(FixtureClient(srv.url, srv.key), name)


def audit_recipe(control: FixtureClient, name: str) -> None:
    """A careful recipe audits clean (warnings allowed); a wrong one is reported, its errors failing."""
    with control:
        if not deliberately_wrong(name):
            control.assert_clean()
            return
        audit = control.audit()
        assert audit.findings, f"{name}: the audit reports nothing"
        if audit.errors:
            with pytest.raises(AssertionError, match=audit.errors[0].rule):
                control.assert_clean()
