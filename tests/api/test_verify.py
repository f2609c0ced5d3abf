"""`hermes-server verify URL`: the contract checked against a live server, end to end.

The command runs as users run it (a process of its own) against real servers on loopback:
hermes-server as served, bug-for-bug and as 0.21.2, and (interop tier) the real hermes-agent
0.19.0 over its mock model. Each full run (`--write --with-chat`) is in the slow tier; the
read-only run, which must leave the home byte for byte as it was, and the refusals are not.
"""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.support.server import KEY, clean_env, free_port, start_server

FULL = ("--write", "--with-chat")
# What a run against hermes-server as served must name: every deviation a request can reach.
REACHABLE = {"D1", "D2", "D3", "D4", "D5", "D6", "D8", "D9", "D10", "D11"}
# The rows of docs/versions.md a 0.21.2 server held to 0.19.0 shows, through the corpus.
ROWS_0_21 = {
    "401 on a missing or wrong key", "`/health`, `/v1/health`, `/health/detailed` `version`",
    "`/v1/capabilities` `features` order and names", "`/v1/capabilities` `endpoints` order",
    "`run_steer` flag and endpoint", "`runs_idempotency` capability",
    "`model_options`, `session_model_lock` flags and endpoints", "`POST /v1/runs/{run_id}/steer`",
    "`POST /v1/runs/{id}/stop` on a finished run", "`POST /v1/runs` 202 answer", "`GET /api/model/options`",
    "`POST /api/sessions/{id}/model`", "`GET /api/sessions/{id}/messages` paging", "`POST /api/sessions` `model`",
    "session object `pinned`, `archived`, `hidden`", "browser-control, artifact and room-member routes (8)",
    "`runtime` on session chat (`/chat` answer after `usage`; `run.started`, `assistant.completed`, "
    "`run.completed` on `/chat/stream`)",
    # 0.21's prefix: the corpus's `/p/<name>/` steps answer 404 for a profile not the server's own.
    "`/p/<name>/…` mirrors",
}


def verify(url: str, key: str | None, *args: str, timeout: float = 600) -> subprocess.CompletedProcess[str]:
    """`hermes-server verify URL --key KEY ARGS` as a process; its output and exit status."""
    command = [sys.executable, "-m", "hermes_server", "verify", url, *(["--key", key] if key else []), *args]
    return subprocess.run(command, capture_output=True, text=True, timeout=timeout, env=clean_env())


def report(done: subprocess.CompletedProcess[str]) -> dict[str, Any]:
    assert done.returncode in (0, 1), done.stderr
    data: dict[str, Any] = json.loads(done.stdout)
    return data


def rows(home: Path) -> dict[str, Any]:
    """What a home holds, row by row: every state.db table but SQLite's own and the full-text index's,
    the cron jobs, and response_store.db's responses and conversations."""
    held: dict[str, Any] = {}
    for name in ("state.db", "response_store.db"):
        if not (home / name).exists():
            continue
        conn = sqlite3.connect(f"file:{home / name}?mode=ro", uri=True)
        try:
            tables = [t for (t,) in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
                      if not t.startswith("sqlite_") and "_fts" not in t]
            for table in tables:
                held[f"{name}:{table}"] = sorted(map(repr, conn.execute(f'SELECT * FROM "{table}"')))
        finally:
            conn.close()
    jobs = home / "cron" / "jobs.json"
    held["cron jobs"] = json.loads(jobs.read_text()).get("jobs") if jobs.exists() else []
    return held


def files(home: Path) -> dict[Path, bytes]:
    """Every file of a home and its bytes, once the server has left them alone: the checkpoint
    thread copies the WAL into state.db a second after the last commit (store/checkpoint.py), so
    the files count once they held still for a while. SQLite's shared-memory index (`-shm`) is left
    out: every reader writes to it."""
    def now() -> dict[Path, bytes]:
        return {path.relative_to(home): path.read_bytes() for path in sorted(home.rglob("*"))
                if path.is_file() and not path.name.endswith("-shm")}

    seen, deadline = now(), time.monotonic() + 30
    while time.monotonic() < deadline:
        time.sleep(1.5)
        latest = now()
        if latest == seen:
            return latest
        seen = latest
    raise AssertionError(f"{home} kept changing")


def seed(c: httpx.Client) -> None:
    """Rows a user's server holds before a check: sessions with a turn and a fork, a cron job, a response."""
    assert c.post("/api/sessions", json={"id": "mine", "title": "Mine"}).status_code == 201
    assert c.post("/api/sessions/mine/chat", json={"message": "keep me"}).status_code == 200
    assert c.post("/api/sessions/mine/fork", json={"id": "mine-fork"}).status_code == 201
    assert c.post("/api/jobs", json={"name": "nightly", "schedule": "every 1d", "prompt": "x"}).status_code == 200
    assert c.post("/v1/responses", json={"input": "remember this"}).status_code == 200


@pytest.mark.parametrize(("args", "says"), [
    ((), "give the server's key"),
    (("--key", KEY, "--profile", "9.9.9"), "no profile '9.9.9'"),
    (("--key", KEY, "--with-chat"), "--with-chat needs --write"),
])
def test_a_usage_error_is_one_line_and_exit_2(args: tuple[str, ...], says: str) -> None:
    done = subprocess.run([sys.executable, "-m", "hermes_server", "verify", "http://127.0.0.1:9", *args],
                          capture_output=True, text=True, timeout=60, env=clean_env())
    assert done.returncode == 2
    assert says in done.stderr and len(done.stderr.strip().splitlines()) == 1 and "Traceback" not in done.stderr


@pytest.mark.parametrize("url", ["127.0.0.1:8642", "ftp://127.0.0.1/", "http://127.0.0.1:{port}"])
def test_a_bad_url_or_nothing_listening_is_one_line_and_exit_2(url: str) -> None:
    done = verify(url.format(port=free_port()), KEY, timeout=60)
    assert done.returncode == 2, done.stdout
    assert done.stderr.startswith("hermes-server verify: ") and len(done.stderr.strip().splitlines()) == 1
    assert "Traceback" not in done.stderr and not done.stdout


def test_a_refused_key_is_one_line_and_exit_2(tmp_path: Path) -> None:
    server = start_server(tmp_path / "home", in_process=True)
    try:
        done = verify(server.url, "wrong-key-0123456789abcdef", timeout=60)
    finally:
        server.stop()
    assert done.returncode == 2
    assert "refused the key" in done.stderr and "wrong-key" not in done.stderr + done.stdout


def test_help_says_what_it_does_and_what_its_exit_statuses_mean() -> None:
    done = subprocess.run([sys.executable, "-m", "hermes_server", "verify", "--help"], capture_output=True,
                          text=True, timeout=60, env=clean_env())
    assert done.returncode == 0
    for words in ("--write", "--with-chat", "--profile", "--json", "prefix", "never printed",
                  "0 no drift, 1 drift, 2 a usage or connection error"):
        assert words in done.stdout


# A whole verify run, its eight references started in process (about 12 s): the slow tier, so that
# make test-fast stays under a minute.
@pytest.mark.slow
def test_a_read_only_run_writes_nothing(tmp_path: Path) -> None:
    """Without --write: the home's files are as they were, byte for byte (SQLite's shared-memory
    index aside, which every reader writes), and what drifts is named."""
    server = start_server(tmp_path / "home", in_process=True)
    try:
        seed(server.client)
        before = files(server.home)
        done = verify(server.url, KEY, "--json")
        after = files(server.home)
    finally:
        server.stop()
    assert after.keys() == before.keys()
    assert [name for name in before if after[name] != before[name]] == []
    data = report(done)
    assert done.returncode == 1 and data["result"]["unexplained"] == 0
    assert {d["deviation"]["row"] for d in data["drift"]} == {"D4", "D5", "D6", "D8", "D11"}
    assert data["cleanup"] == {"created": {"sessions": 0, "jobs": 0, "responses": 0, "runs": 0}, "not_removed": []}
    assert data["coverage"]["not_played"]["writes"] > 0 and KEY not in done.stdout + done.stderr


@pytest.mark.slow
def test_hermes_server_as_served_drifts_by_its_deviations_and_is_left_as_it_was(tmp_path: Path) -> None:
    """Every drift of a full run is one of D1-D11, each named (D7 needs a storage failure no request
    causes, and the coverage says so); the seeded rows are all there afterwards and nothing else is."""
    server = start_server(tmp_path / "home")
    try:
        seed(server.client)
        before = rows(server.home)
        done = verify(server.url, KEY, *FULL)
        data = report(verify(server.url, KEY, *FULL, "--json"))
        after = rows(server.home)
    finally:
        server.stop()
    assert done.returncode == 1
    assert after == before
    assert data["result"]["unexplained"] == 0 and data["answers_like"] == {}
    assert {d["deviation"]["row"] for d in data["drift"]} == REACHABLE
    assert all(d["release_rows"] == [] for d in data["drift"])
    assert data["coverage"]["deviations_reachable"] == sorted(REACHABLE, key=lambda row: int(row[1:]))
    assert data["cleanup"]["not_removed"] == [] and data["cleanup"]["created"]["sessions"] > 50
    for row in sorted(REACHABLE):
        assert f"| {row}: " in done.stdout  # the table names each one
    assert "not reachable in this run: D7" in done.stdout and KEY not in done.stdout + done.stderr


@pytest.mark.slow
def test_hermes_server_bug_for_bug_has_no_drift(tmp_path: Path) -> None:
    server = start_server(tmp_path / "home", "--upstream-quirks")
    try:
        done = verify(server.url, KEY, *FULL)
    finally:
        server.stop()
    assert done.returncode == 0, done.stdout
    assert done.stdout.rstrip().endswith("result: no drift")


@pytest.mark.slow
def test_a_0212_server_held_to_0190_shows_the_0212_rows(tmp_path: Path) -> None:
    server = start_server(tmp_path / "home", "--hermes-version", "0.21.2")
    try:
        done = verify(server.url, KEY, *FULL, "--profile", "0.19.0")
        data = report(verify(server.url, KEY, *FULL, "--profile", "0.19.0", "--json"))
    finally:
        server.stop()
    assert done.returncode == 1 and data["result"]["unexplained"] == 0
    assert {row["behaviour"] for d in data["drift"] for row in d["release_rows"]} == ROWS_0_21
    assert max(data["answers_like"].items(), key=lambda item: item[1])[0] == "0.21.2"
    assert "the target answers like 0.21.2, not 0.19.0" in done.stdout
    assert all(row["since"] in ("0.20.4", "0.21.2") for d in data["drift"] for row in d["release_rows"])


@pytest.mark.slow
@pytest.mark.interop
def test_real_hermes_0190_has_no_drift_and_is_left_as_it_was(tmp_path: Path) -> None:
    """The issue's first line: the real hermes-agent 0.19.0 API server (its mock model) checked with
    everything on, drift none; what it held before (sessions, a turn, a fork, a job, a response) is
    there afterwards, and nothing else."""
    from tests.support.upstream_api import UpstreamServer

    with UpstreamServer(tmp_path / "upstream") as upstream:
        with httpx.Client(base_url=upstream.url, headers={"Authorization": f"Bearer {upstream.key}"},
                          timeout=60) as client:
            seed(client)
        before = rows(upstream.home)
        done = verify(upstream.url, upstream.key, *FULL, "--profile", "0.19.0")
        after = rows(upstream.home)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    assert done.stdout.rstrip().endswith("result: no drift")
    assert "all of it removed" in done.stdout and upstream.key not in done.stdout + done.stderr
    assert after == before
