"""GET, PATCH and DELETE /api/sessions/{id} (spec §3.5, §3.8, §4.3–§4.5; vectors T43–T60)."""

from __future__ import annotations

import time
from typing import Any

import pytest

from tests.support.db import database_opened, insert_message, insert_session, sql  # noqa: F401
from tests.support.http import create_session as make
from tests.support.http import (
    error,
    raw_request,
)
from tests.support.server import RunningServer

pytestmark = pytest.mark.in_process

INVALID_JSON = error(None, "Invalid JSON in request body")
T0 = 1_700_000_000.0


def not_found(session_id: str) -> dict[str, Any]:
    return error("session_not_found", f"Session not found: {session_id}")


def get(server: RunningServer, session_id: str) -> dict[str, Any]:
    r = server.client.get(f"/api/sessions/{session_id}")
    assert r.status_code == 200, r.text
    return r.json()["session"]


def patch(server: RunningServer, session_id: str, body: Any):
    return server.client.patch(f"/api/sessions/{session_id}", json=body)


# -- get ------------------------------------------------------------------------------


def test_get_returns_the_create_projection(server: RunningServer) -> None:
    created = make(server, "gp-get", title="gp get", system_prompt="sp", model="m1")
    r = server.client.get("/api/sessions/gp-get")
    assert r.json() == {"object": "hermes.session", "session": created}
    assert list(r.json()) == ["object", "session"]


def test_t43_space_id_404(server: RunningServer) -> None:
    r = raw_request(server, "GET", "/api/sessions/%20")
    assert (r.status, r.json()) == (404, not_found(" "))
    assert r.body == (b'{"error": {"message": "Session not found:  ", "type": "invalid_request_error", '
                      b'"param": null, "code": "session_not_found"}}')
    assert r.has_security_headers()


def test_404_message_is_redacted(server: RunningServer) -> None:
    r = raw_request(server, "GET", "/api/sessions/sk-ant-api03-abcdefghijklmnopqrstuvwxyz")
    assert (r.status, r.json()) == (404, not_found("sk-ant...wxyz"))


@pytest.mark.parametrize(
    ("session_id", "path"),
    [("gp/a/b", "gp%2Fa%2Fb"), ("gp sp ace%", "gp%20sp%20ace%25"), ("gp-caf\u00e9", "gp-caf%C3%A9"),
     ("gp+a+b", "gp%2Ba%2Bb"), ("gp/x/../y", "gp%2Fx%2F..%2Fy"), ("gp-lower", "gp-%6Cower")],
)
def test_t44_path_ids_are_percent_decoded(server: RunningServer, session_id: str, path: str) -> None:
    if "/" in session_id:  # create refuses '/', fork does not
        source = f"gp-src-{len(path)}"
        make(server, source)
        assert server.client.post(f"/api/sessions/{source}/fork", json={"id": session_id}).status_code == 201
    else:
        make(server, session_id)
    r = raw_request(server, "GET", f"/api/sessions/{path}")
    assert r.status == 200, (path, r.body)
    assert r.json()["session"]["id"] == session_id


def test_invalid_utf8_escapes_stay_literal(server: RunningServer) -> None:
    r = raw_request(server, "GET", "/api/sessions/%FF%FE")
    assert r.json() == not_found("%FF%FE")
    assert raw_request(server, "GET", "/api/sessions/%C3%A9%FF").json() == not_found("\u00e9%FF")
    assert raw_request(server, "GET", "/api/sessions/%25%32%46").json() == not_found("%2F")


def test_t44b_unescaped_slash_is_a_framework_404(server: RunningServer) -> None:
    r = raw_request(server, "GET", "/api/sessions/a/b")
    assert (r.status, r.body, r.headers["content-type"]) == (404, b"404: Not Found", "text/plain; charset=utf-8")
    assert r.has_no_security_headers()


def test_lookup_is_exact_and_case_sensitive(server: RunningServer) -> None:
    make(server, "gp-Case")
    assert server.client.get("/api/sessions/gp-case").json() == not_found("gp-case")
    assert server.client.get("/api/sessions/gp-Cas").status_code == 404  # no prefix matching


def test_t45_get_does_not_follow_compression(server: RunningServer) -> None:
    insert_session(server.db_path, "gp-R", started_at=T0, end_reason="compression", ended_at=T0 + 1, title="gp R")
    insert_session(server.db_path, "gp-R2", started_at=T0 + 2, parent="gp-R")
    row = get(server, "gp-R")
    assert (row["id"], row["end_reason"], row["title"]) == ("gp-R", "compression", "gp R")
    assert "_lineage_root_id" not in row and "last_active" not in row


def test_archived_rows_are_readable(server: RunningServer) -> None:
    insert_session(server.db_path, "gp-arch", archived=1)
    assert get(server, "gp-arch")["id"] == "gp-arch"


def test_foreign_rows_are_projected_safely(server: RunningServer) -> None:
    insert_session(server.db_path, "gp-tg", source="telegram", user_id="tg-user-42", session_key="agent:secret",
                   cwd="/home/x", model_config={"_delegate_from": "x"}, billing_provider="p")
    row = get(server, "gp-tg")
    assert (row["source"], row["user_id"], row["has_model_config"]) == ("telegram", "tg-user-42", True)
    assert not {"session_key", "cwd", "model_config", "billing_provider"} & set(row)


# -- patch ----------------------------------------------------------------------------


def test_t46_unknown_fields_reject_the_whole_patch(server: RunningServer) -> None:
    make(server, "gp-46", title="gp 46")
    r = patch(server, "gp-46", {"model": "x", "foo": 1, "title": "n"})
    assert (r.status_code, r.json()) == (400, error("unsupported_session_field", "Unsupported session fields: foo, model"))
    assert get(server, "gp-46")["title"] == "gp 46"
    r = patch(server, "gp-46", {"x": None, "end_reason": "done"})
    assert r.json() == error("unsupported_session_field", "Unsupported session fields: x")
    assert get(server, "gp-46")["end_reason"] is None
    r = patch(server, "gp-46", {"title": "x" * 101, "foo": 1})  # unknown fields are checked first
    assert r.json()["error"]["code"] == "unsupported_session_field"


def test_t47_404_comes_before_the_body(server: RunningServer) -> None:
    r = raw_request(server, "PATCH", "/api/sessions/NOPE", b"{")
    assert (r.status, r.json()) == (404, not_found("NOPE"))


def test_t48_empty_object_is_a_no_op(server: RunningServer) -> None:
    created = make(server, "gp-48", title="gp 48")
    r = patch(server, "gp-48", {})
    assert (r.status_code, r.json()) == (200, {"object": "hermes.session", "session": created})


@pytest.mark.parametrize(("raw", "expected"), [
    (b"", INVALID_JSON),  # T48b
    (b"{", INVALID_JSON),
    (b"\xef\xbb\xbf{}", INVALID_JSON),
    (b"[1]", error(None, "Request body must be a JSON object")),
    (b"null", error(None, "Request body must be a JSON object")),
])
def test_t48b_bad_bodies(server: RunningServer, raw: bytes, expected: dict) -> None:
    if server.client.get("/api/sessions/gp-48b").status_code == 404:
        make(server, "gp-48b")
    r = raw_request(server, "PATCH", "/api/sessions/gp-48b", raw)
    assert (r.status, r.json()) == (400, expected)


def test_t49_t51_duplicate_title(server: RunningServer) -> None:
    make(server, "gp-Z", title="gp Other")
    make(server, "gp-49", title="gp mine")
    r = patch(server, "gp-49", {"title": "gp Other"})
    assert (r.status_code, r.json()) == (400, error("invalid_title", "Title 'gp Other' is already in use by session gp-Z"))
    r = patch(server, "gp-49", {"title": "  gp\u200b Other ", "end_reason": "x"})  # T51: same after sanitising
    assert r.json() == error("invalid_title", "Title 'gp Other' is already in use by session gp-Z")
    row = get(server, "gp-49")
    assert (row["title"], row["end_reason"], row["ended_at"]) == ("gp mine", None, None)


def test_t50_title_too_long(server: RunningServer) -> None:
    make(server, "gp-50", title="gp 50")
    r = patch(server, "gp-50", {"title": "x" * 101, "end_reason": "x"})
    assert (r.status_code, r.json()) == (400, error("invalid_title", "Title too long (101 chars, max 100)"))
    assert (get(server, "gp-50")["title"], get(server, "gp-50")["end_reason"]) == ("gp 50", None)
    assert patch(server, "gp-50", {"title": "y" * 100}).json()["session"]["title"] == "y" * 100


@pytest.mark.parametrize(
    ("title", "stored"),
    [(None, None), (0, "0"), ("", None), (" \t ", None), (False, "False"), ([1], "[1]"),
     ("  a\x01b\t\tc\u200bd\n e  ", "ab cd e"), ("\u200b", None)],
)
def test_t52_title_values(server: RunningServer, title: Any, stored: str | None) -> None:
    session_id = f"gp-52-{abs(hash(repr(title))) % 10**8}"
    make(server, session_id, title=f"{session_id} before")
    r = patch(server, session_id, {"title": title})
    assert r.status_code == 200
    assert r.json()["session"]["title"] == stored


def test_lone_surrogate_title_is_repaired(server: RunningServer) -> None:
    make(server, "gp-sur")
    r = raw_request(server, "PATCH", "/api/sessions/gp-sur", b'{"title": "p\\udfffq"}')
    assert (r.status, r.json()["session"]["title"]) == (200, "p\ufffdq")


def test_t52c_own_title_is_a_no_op(server: RunningServer) -> None:
    make(server, "gp-52c", title="gp 52c")
    assert patch(server, "gp-52c", {"title": "gp 52c"}).json()["session"]["title"] == "gp 52c"
    assert patch(server, "gp-52c", {"title": " gp  52c "}).status_code == 200


@pytest.mark.parametrize("reason", ["", False, 0, [], None, {}])
def test_t53_falsy_end_reason_is_ignored(server: RunningServer, reason: Any) -> None:
    session_id = f"gp-53-{abs(hash(repr(reason))) % 10**8}"
    make(server, session_id)
    r = patch(server, session_id, {"end_reason": reason})
    assert r.status_code == 200
    assert (r.json()["session"]["end_reason"], r.json()["session"]["ended_at"]) == (None, None)


def test_t54_first_close_wins(server: RunningServer) -> None:
    make(server, "gp-54")
    before = time.time()
    first = patch(server, "gp-54", {"end_reason": "client_closed"}).json()["session"]
    second = patch(server, "gp-54", {"end_reason": "other"}).json()["session"]
    assert first["end_reason"] == second["end_reason"] == "client_closed"
    assert first["ended_at"] == second["ended_at"]
    assert before - 1 <= first["ended_at"] <= time.time() + 1


@pytest.mark.parametrize(("reason", "stored"), [(5, "5"), (True, "True"), ("  ", "  "), ({"a": 1}, "{'a': 1}"),
                                                ("compression", "compression"), (1.5, "1.5")])
def test_t55_end_reason_is_stringified_not_validated(server: RunningServer, reason: Any, stored: str) -> None:
    session_id = f"gp-55-{abs(hash(repr(reason))) % 10**8}"
    make(server, session_id)
    assert patch(server, session_id, {"end_reason": reason}).json()["session"]["end_reason"] == stored


def test_title_and_end_reason_together(server: RunningServer) -> None:
    make(server, "gp-both")
    s = patch(server, "gp-both", {"title": "gp both", "end_reason": "done"}).json()["session"]
    assert (s["title"], s["end_reason"]) == ("gp both", "done")
    s = patch(server, "gp-both", {"title": "gp both 2", "end_reason": "later"}).json()["session"]
    assert (s["title"], s["end_reason"]) == ("gp both 2", "done")  # title still changes on a closed session


def test_d6_unstorable_end_reason(server: RunningServer) -> None:
    make(server, "gp-d6", title="gp d6")
    r = raw_request(server, "PATCH", "/api/sessions/gp-d6", b'{"end_reason": "\\ud800", "title": "gp d6 new"}')
    assert (r.status, r.json()) == (400, error(None, "Invalid value for 'end_reason': text must be valid Unicode",
                                               "end_reason"))
    assert get(server, "gp-d6")["end_reason"] is None


def test_t56_title_moves_from_a_compression_ancestor(server: RunningServer) -> None:
    db = server.db_path
    insert_session(db, "gp-X", started_at=T0, end_reason="compression", ended_at=T0 + 1, title="gp Xt")
    insert_session(db, "gp-X2", started_at=T0 + 2, parent="gp-X", end_reason="compression", ended_at=T0 + 3)
    insert_session(db, "gp-X3", started_at=T0 + 4, parent="gp-X2")
    r = patch(server, "gp-X3", {"title": "gp Xt"})  # two levels down
    assert (r.status_code, r.json()["session"]["title"]) == (200, "gp Xt")
    assert get(server, "gp-X")["title"] is None


def test_title_is_not_taken_from_other_relatives(server: RunningServer) -> None:
    db = server.db_path
    insert_session(db, "gp-P", started_at=T0, end_reason="branched", ended_at=T0 + 1, title="gp parent")
    insert_session(db, "gp-P1", started_at=T0 + 2, parent="gp-P")
    r = patch(server, "gp-P1", {"title": "gp parent"})  # a branch parent is not a compression ancestor
    assert r.json() == error("invalid_title", "Title 'gp parent' is already in use by session gp-P")
    insert_session(db, "gp-C", started_at=T0, end_reason="compression", ended_at=T0 + 1)
    insert_session(db, "gp-C1", started_at=T0 + 2, parent="gp-C", title="gp child")
    r = patch(server, "gp-C", {"title": "gp child"})  # nor is a descendant
    assert r.json() == error("invalid_title", "Title 'gp child' is already in use by session gp-C1")


def test_patch_archived_and_text_plain(server: RunningServer) -> None:
    insert_session(server.db_path, "gp-arch-p", archived=1)
    r = raw_request(server, "PATCH", "/api/sessions/gp-arch-p", b'{"title": "gp arch"}', {"Content-Type": "text/plain"})
    assert (r.status, r.json()["session"]["title"]) == (200, "gp arch")
    assert sql(server.db_path, "SELECT archived FROM sessions WHERE id = 'gp-arch-p'") == [(1,)]


# -- delete ---------------------------------------------------------------------------


def test_t57_t58_delete_cascades_delegates_and_unlinks_the_rest(server: RunningServer) -> None:
    db = server.db_path
    insert_session(db, "gp-dP", started_at=T0)
    insert_message(db, "gp-dP", "user", "p", T0 + 1)
    insert_session(db, "gp-dD", started_at=T0 + 1, parent="gp-dP", model_config={"_delegate_from": "gp-dP"})
    insert_message(db, "gp-dD", "user", "d", T0 + 2)
    insert_session(db, "gp-dDD", started_at=T0 + 2, parent="gp-dD", model_config={"_delegate_from": "gp-dD"})
    insert_session(db, "gp-dM", started_at=T0 + 3, model_config={"_delegate_from": "gp-dP"})  # marker only
    insert_session(db, "gp-dF", started_at=T0 + 3, parent="gp-dP", model_config={"_delegate_from": "elsewhere"})
    insert_session(db, "gp-dU", started_at=T0 + 4, parent="gp-dP")
    insert_session(db, "gp-dDU", started_at=T0 + 4, parent="gp-dD")  # untagged child of a delegate
    insert_session(db, "gp-dB", started_at=T0 + 5, parent="gp-dP", model_config={"_branched_from": "gp-dP"})
    assert server.client.post("/api/sessions/gp-dP/fork", json={"id": "gp-dPB"}).status_code == 201

    r = server.client.delete("/api/sessions/gp-dP")
    assert (r.status_code, r.json()) == (200, {"object": "hermes.session.deleted", "id": "gp-dP", "deleted": True})
    assert list(r.json()) == ["object", "id", "deleted"]
    for gone in ("gp-dP", "gp-dD", "gp-dDD", "gp-dM", "gp-dF"):
        assert server.client.get(f"/api/sessions/{gone}").json() == not_found(gone)
    for kept in ("gp-dU", "gp-dB", "gp-dPB", "gp-dDU"):
        assert get(server, kept)["parent_session_id"] is None
    assert sql(db, "SELECT COUNT(*) FROM messages WHERE session_id IN ('gp-dP', 'gp-dD')") == [(0,)]
    assert get(server, "gp-dPB")["message_count"] == 1  # the fork keeps its copied messages
    r = server.client.delete("/api/sessions/gp-dP")  # T58
    assert (r.status_code, r.json()) == (404, not_found("gp-dP"))


def test_t59_deleting_a_compression_root_promotes_the_continuation(server: RunningServer) -> None:
    db = server.db_path
    tag = "gp-t59"
    insert_session(db, f"{tag}-R", source=tag, started_at=T0, end_reason="compression", ended_at=T0 + 1)
    insert_session(db, f"{tag}-R2", source=tag, started_at=T0 + 2, parent=f"{tag}-R", end_reason="compression",
                   ended_at=T0 + 3)
    insert_session(db, f"{tag}-R3", source=tag, started_at=T0 + 4, parent=f"{tag}-R2")
    assert server.client.delete(f"/api/sessions/{tag}-R").status_code == 200
    assert get(server, f"{tag}-R2")["parent_session_id"] is None
    data = server.client.get(f"/api/sessions?source={tag}").json()["data"]
    assert [(d["id"], d["_lineage_root_id"]) for d in data] == [(f"{tag}-R3", f"{tag}-R2")]


def test_t60_delete_missing(server: RunningServer) -> None:
    r = server.client.delete("/api/sessions/NOPE")
    assert (r.status_code, r.json()) == (404, not_found("NOPE"))


def test_delete_ignores_a_body_and_keeps_usage_rows_consistent(server: RunningServer) -> None:
    make(server, "gp-body")
    sql(server.db_path, "INSERT INTO session_model_usage (session_id, model, billing_provider, billing_base_url,"
                        " billing_mode, task) VALUES ('gp-body', 'm', '', '', '', '')")
    r = raw_request(server, "DELETE", "/api/sessions/gp-body", b"{not json")
    assert r.status == 200
    assert sql(server.db_path, "SELECT COUNT(*) FROM session_model_usage WHERE session_id = 'gp-body'") == [(0,)]


def test_delete_percent_encoded_id(server: RunningServer) -> None:
    make(server, "gp-del-src")
    server.client.post("/api/sessions/gp-del-src/fork", json={"id": "gp/del"})
    assert raw_request(server, "DELETE", "/api/sessions/gp%2Fdel").json()["id"] == "gp/del"
    assert raw_request(server, "GET", "/api/sessions/gp%2Fdel").status == 404


def test_another_processes_commit_is_seen_by_the_next_request(server: RunningServer) -> None:
    make(server, "gp-ext", title="gp ext before")
    assert get(server, "gp-ext")["title"] == "gp ext before"
    sql(server.db_path, "UPDATE sessions SET title = 'gp ext after', message_count = 7 WHERE id = 'gp-ext'")
    row = get(server, "gp-ext")
    assert (row["title"], row["message_count"]) == ("gp ext after", 7)
    sql(server.db_path, "DELETE FROM sessions WHERE id = 'gp-ext'")
    assert server.client.get("/api/sessions/gp-ext").json() == not_found("gp-ext")
    assert server.client.patch("/api/sessions/gp-ext", json={}).status_code == 404
