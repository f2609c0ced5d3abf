"""Seed 003 ("Manage a persisted Hermes session lifecycle"), step by step, with every
verification the guide asks for: create → get → list → chat → messages → patch title →
fork → chat on the child → patch end_reason → delete."""

from __future__ import annotations

import json
import sqlite3

from tests.support.server import RunningServer

SID = "support-case-example-2030"
CHILD = "support-case-example-2030-alternative"
MEMORY = {"X-Hermes-Session-Key": "support:case-review"}
HIDDEN = {"system_prompt", "model_config", "session_key", "cwd", "billing_provider"}


def test_seed_003_lifecycle(fresh_server: RunningServer) -> None:
    c = fresh_server.client

    # 3. Create the transcript; the projection does not return the stored prompt or model config.
    r = c.post("/api/sessions", json={"id": SID, "title": "Support case example 2030", "model": "hermes-agent",
                                      "system_prompt": "Keep the transcript factual and concise."})
    assert r.status_code == 201
    created = r.json()["session"]
    assert created["id"] == SID and not HIDDEN & set(created)

    # 4. Verify the exact row, then find it in the list (de-duplicated by id).
    row = c.get(f"/api/sessions/{SID}").json()["session"]
    assert (row["id"], row["source"], row["title"], row["model"]) == (
        SID, "api_server", "Support case example 2030", "hermes-agent")
    assert (row["ended_at"], row["end_reason"], row["has_system_prompt"]) == (None, None, True)
    page = c.get("/api/sessions", params={"source": "api_server", "limit": 50, "offset": 0}).json()
    assert (page["limit"], page["offset"]) == (50, 0)
    assert [s["id"] for s in page["data"]].count(SID) == 1

    # 5. One bounded turn with an ephemeral instruction and a memory scope.
    r = c.post(f"/api/sessions/{SID}/chat", headers=MEMORY, json={
        "message": "Summarize the verified facts already present in this transcript.",
        "system_message": "Return at most three factual bullets. Do not call tools."})
    assert r.status_code == 200
    turn = r.json()
    effective = turn["session_id"]  # retain the effective id (no compression configured: unchanged)
    assert effective == SID == r.headers["x-hermes-session-id"]
    assert r.headers["x-hermes-session-key"] == "support:case-review"
    assert turn["message"]["role"] == "assistant" and turn["message"]["content"]
    assert set(turn["usage"]) == {"input_tokens", "output_tokens", "total_tokens"}

    # 6. Messages under the effective id: user turn, then the assistant row with finish metadata.
    listing = c.get(f"/api/sessions/{effective}/messages").json()
    assert listing["session_id"] == effective
    messages = listing["data"]
    assert [(m["role"], m["session_id"]) for m in messages] == [("user", SID), ("assistant", SID)]
    assert messages[0]["content"] == "Summarize the verified facts already present in this transcript."
    assert (messages[1]["content"], messages[1]["finish_reason"]) == (turn["message"]["content"], "stop")
    assert "three factual bullets" not in json.dumps(listing)  # the instruction was ephemeral
    with sqlite3.connect(fresh_server.db_path) as conn:
        stored = conn.execute("SELECT system_prompt, session_key FROM sessions WHERE id = ?", (SID,)).fetchone()
    assert "three factual bullets" not in stored[0] and stored[1] is None  # the memory scope addresses nothing

    # 7. Patch client-visible metadata; unknown fields fail instead of changing hidden state.
    r = c.patch(f"/api/sessions/{SID}", json={"title": "Support case example 2030 — reviewed"})
    assert r.status_code == 200
    assert c.get(f"/api/sessions/{SID}").json()["session"]["title"] == "Support case example 2030 — reviewed"
    r = c.patch(f"/api/sessions/{SID}", json={"model": "other", "title": "x"})
    assert (r.status_code, r.json()["error"]["code"]) == (400, "unsupported_session_field")
    assert c.get(f"/api/sessions/{SID}").json()["session"]["title"] == "Support case example 2030 — reviewed"

    # 8. Fork the verified transcript, then reconcile source and child separately.
    r = c.post(f"/api/sessions/{SID}/fork", json={"id": CHILD, "title": "Support case example 2030 — alternative"})
    assert r.status_code == 201
    source = c.get(f"/api/sessions/{SID}").json()["session"]
    child = c.get(f"/api/sessions/{CHILD}").json()["session"]
    assert source["end_reason"] == "branched"
    assert (child["parent_session_id"], child["title"], child["message_count"]) == (
        SID, "Support case example 2030 — alternative", 2)
    copied = c.get(f"/api/sessions/{CHILD}/messages").json()
    assert copied["session_id"] == CHILD
    assert [(m["role"], m["content"]) for m in copied["data"]] == [(m["role"], m["content"]) for m in messages]

    # 9. Continue from the verified child; the parent's transcript is untouched.
    r = c.post(f"/api/sessions/{CHILD}/chat", headers=MEMORY, json={"message": "Propose the alternative plan."})
    assert (r.status_code, r.json()["session_id"]) == (200, CHILD)
    child_messages = c.get(f"/api/sessions/{CHILD}/messages").json()
    assert child_messages["session_id"] == CHILD
    assert [m["role"] for m in child_messages["data"]] == ["user", "assistant", "user", "assistant"]
    assert child_messages["data"][2]["content"] == "Propose the alternative plan."
    assert c.get(f"/api/sessions/{SID}").json()["session"]["message_count"] == 2
    assert c.get(f"/api/sessions/{SID}/messages").json()["session_id"] == SID

    # 10a. Close by metadata: the first non-empty reason wins; chat is not refused afterwards.
    first = c.patch(f"/api/sessions/{CHILD}", json={"end_reason": "client_closed"}).json()["session"]
    again = c.patch(f"/api/sessions/{CHILD}", json={"end_reason": "other"}).json()["session"]
    assert (first["end_reason"], again["end_reason"], again["ended_at"]) == (
        "client_closed", "client_closed", first["ended_at"])
    assert c.post(f"/api/sessions/{CHILD}/chat", json={"message": "after close"}).status_code == 200
    assert c.get(f"/api/sessions/{CHILD}").json()["session"]["end_reason"] == "client_closed"

    # 10b. Delete the child once, then read the target and its parent.
    r = c.delete(f"/api/sessions/{CHILD}")
    assert r.json() == {"object": "hermes.session.deleted", "id": CHILD, "deleted": True}
    assert c.get(f"/api/sessions/{CHILD}").status_code == 404
    assert c.get(f"/api/sessions/{CHILD}/messages").status_code == 404
    parent = c.get(f"/api/sessions/{SID}").json()["session"]
    assert (parent["end_reason"], parent["message_count"]) == ("branched", 2)
    assert c.delete(f"/api/sessions/{CHILD}").status_code == 404  # a replayed delete finds nothing
