"""A hypothesis state machine over create, patch, fork, chat (with rotation) and delete.

The server runs with `--compress-after-messages 3`, so any turn on a session
that already has messages rotates it into a compression continuation (and a
closed-by-compression session rotates again on its next turn). After every step the invariants are
checked against the stored rows, read independently of the server:

- no orphan messages, no child of a missing parent, `message_count` equal to the
  rows and the full-text indexes in step with them (support.lineage_problems);
- the list shows every visible root exactly once and nothing else: never a
  compression continuation, never a fork of a session that was already closed,
  never a deleted row; a compression root appears as its tip;
- `/messages` of any session resolves to the session itself or to a compression
  descendant, never to a fork (a child whose parent was closed other than by
  `compression`);
- `api_call_count` equals the chat turns the server reported on that row.

Each example starts from an empty state.db (POST /_fixture/reset).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from hypothesis import HealthCheck, event, settings
from hypothesis import strategies as st
from hypothesis.stateful import Bundle, RuleBasedStateMachine, initialize, invariant, multiple, rule

from tests.support.db import integrity, lineage_problems, sql
from tests.support.server import RunningServer, log_trouble, start_server

pytestmark = pytest.mark.slow

ROTATE_AFTER = 3
TITLES = st.one_of(st.none(), st.sampled_from(["alpha", "beta", "alpha #2", "gamma"]))
END_REASONS = st.sampled_from(["done", "client_closed", "compression"])

_server: RunningServer | None = None
TOTALS: Counter[str] = Counter()  # over every example, printed at the end (docs/reliability.md)


@pytest.fixture(scope="module")
def lineage_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningServer]:
    global _server
    home = tmp_path_factory.mktemp("lineage") / "hermes"
    _server = start_server(home, "--compress-after-messages", str(ROTATE_AFTER), "--fixture-api")
    yield _server
    print(f"\nlineage machine: {TOTALS['examples']} examples, {TOTALS['steps']} checked steps, "
          f"{TOTALS['rotated']} rotations, {TOTALS['fork 201']} forks, {TOTALS['deleted']} deletes")
    assert integrity(_server.db_path) == "ok"
    assert log_trouble(_server) == []
    _server.stop()
    _server = None


def _rows(db_path: Path) -> dict[str, dict[str, Any]]:
    columns = ("id", "parent_session_id", "source", "model_config", "started_at", "ended_at", "end_reason",
               "archived", "api_call_count")
    return {row[0]: dict(zip(columns, row, strict=True))
            for row in sql(db_path, f"SELECT {', '.join(columns)} FROM sessions")}


def _marker(row: dict[str, Any], name: str) -> bool:
    return f'"{name}"' in (row["model_config"] or "")


def continues(rows: dict[str, dict[str, Any]], child: dict[str, Any]) -> bool:
    """The child continues its parent's compression chain (upstream's edge rule)."""
    parent = rows.get(child["parent_session_id"] or "")
    return (parent is not None and parent["end_reason"] == "compression" and not _marker(child, "_branched_from")
            and not _marker(child, "_delegate_from") and (child["source"] or "") != "tool")


def visible(rows: dict[str, dict[str, Any]], row: dict[str, Any]) -> bool:
    """Shown in the default list as its own entry (a root or a branch)."""
    if row["archived"] or _marker(row, "_delegate_from"):
        return False
    if row["parent_session_id"] is None or _marker(row, "_branched_from"):
        return True
    parent = rows.get(row["parent_session_id"])
    return (parent is not None and parent["end_reason"] == "branched" and parent["ended_at"] is not None
            and row["started_at"] >= parent["ended_at"])


def descends_by_compression(rows: dict[str, dict[str, Any]], node: str, ancestor: str) -> bool:
    """`node` is `ancestor` or reached from it through compression continuation edges only."""
    seen = set()
    while node != ancestor:
        row = rows.get(node)
        if row is None or node in seen or not continues(rows, row):
            return False
        seen.add(node)
        node = row["parent_session_id"]
    return True


class Lineage(RuleBasedStateMachine):
    sessions = Bundle("sessions")

    def __init__(self) -> None:
        super().__init__()
        assert _server is not None
        self.server = _server
        self.client: httpx.Client = _server.client
        self.n = 0
        self.steps = 0
        self.calls: Counter[str] = Counter()  # chat turns the server reported, by effective id

    def fresh_id(self, prefix: str) -> str:
        self.n += 1
        return f"{prefix}{self.n}"

    @initialize(target=sessions)
    def empty_database_with_one_session(self) -> str:
        assert self.client.post("/_fixture/reset", json={"to": "empty"}).status_code == 200
        assert self.client.post("/api/sessions", json={"id": "s0", "title": "first"}).status_code == 201
        return "s0"

    @rule(target=sessions, title=TITLES)
    def create(self, title: str | None) -> Any:
        sid = self.fresh_id("s")
        body = {"id": sid} if title is None else {"id": sid, "title": title}
        answer = self.client.post("/api/sessions", json=body)
        assert answer.status_code in (201, 400), answer.text
        return sid if answer.status_code == 201 else multiple()

    @rule(sid=sessions, title=TITLES, end_reason=st.one_of(st.none(), END_REASONS))
    def patch(self, sid: str, title: str | None, end_reason: str | None) -> None:
        body: dict[str, Any] = {}
        if title is not None:
            body["title"] = title
        if end_reason is not None:
            body["end_reason"] = end_reason
        assert self.client.patch(f"/api/sessions/{sid}", json=body).status_code in (200, 400, 404)

    @rule(target=sessions, sid=sessions, title=TITLES)
    def fork(self, sid: str, title: str | None) -> Any:
        child = self.fresh_id("f")
        body = {"id": child} if title is None else {"id": child, "title": title}
        answer = self.client.post(f"/api/sessions/{sid}/fork", json=body)
        assert answer.status_code in (201, 400, 404), answer.text
        event(f"fork {answer.status_code}")
        TOTALS[f"fork {answer.status_code}"] += 1
        # a 400 (title taken) comes after the child was written, as upstream does
        return child if answer.status_code in (201, 400) else multiple()

    @rule(target=sessions, sid=sessions)
    def chat(self, sid: str) -> Any:
        answer = self.client.post(f"/api/sessions/{sid}/chat", json={"message": f"turn {self.n}"})
        assert answer.status_code in (200, 404), answer.text
        if answer.status_code == 404:
            return multiple()
        effective = answer.json()["session_id"]
        self.calls[effective] += 1
        event("chat rotated" if effective != sid else "chat stayed")
        TOTALS["rotated"] += effective != sid
        return effective if effective != sid else multiple()

    @rule(target=sessions, sid=sessions)
    def chat_twice(self, sid: str) -> Any:
        """Two turns in a row: the second one rotates (a non-empty transcript reaches the limit)."""
        first = self.chat(sid)
        second = self.chat(sid)
        made = [x for x in (first, second) if isinstance(x, str)]
        return multiple(*made)

    @rule(sid=sessions)
    def delete(self, sid: str) -> None:
        status = self.client.delete(f"/api/sessions/{sid}").status_code
        assert status in (200, 404)
        TOTALS["deleted"] += status == 200
        self.calls.pop(sid, None)

    def teardown(self) -> None:
        event(f"steps: {self.steps // 10 * 10}+")
        TOTALS["examples"] += 1
        TOTALS["steps"] += self.steps

    @invariant()
    def stored_rows_are_consistent(self) -> None:
        self.steps += 1
        assert lineage_problems(self.server.db_path) == []

    @invariant()
    def list_shows_each_visible_root_once_and_nothing_else(self) -> None:
        rows = _rows(self.server.db_path)
        data = self.client.get("/api/sessions?limit=200").json()["data"]
        roots = [entry.get("_lineage_root_id", entry["id"]) for entry in data]
        assert len(roots) == len(set(roots)), f"a row listed twice: {roots}"
        assert sorted(roots) == sorted(sid for sid, row in rows.items() if visible(rows, row))
        for entry, root in zip(data, roots, strict=True):
            assert descends_by_compression(rows, entry["id"], root), f"{root} shown as {entry['id']}"

    @invariant()
    def messages_resolve_through_compression_only(self) -> None:
        rows = _rows(self.server.db_path)
        for sid in rows:
            target = self.client.get(f"/api/sessions/{sid}/messages").json()["session_id"]
            assert descends_by_compression(rows, target, sid), f"/messages of {sid} resolved to {target}"

    @invariant()
    def api_calls_match_reported_turns(self) -> None:
        rows = _rows(self.server.db_path)
        assert {sid: row["api_call_count"] for sid, row in rows.items() if row["api_call_count"]} == \
               {sid: n for sid, n in self.calls.items() if n and sid in rows}


Lineage.TestCase.settings = settings(
    max_examples=50, stateful_step_count=25, deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)


@pytest.mark.usefixtures("lineage_server")
class TestLineage(Lineage.TestCase):  # type: ignore[misc,valid-type]
    pass
