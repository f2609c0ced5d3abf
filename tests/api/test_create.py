"""POST /api/sessions (spec §4.2; vectors T10–T30; deviations D1, D3, D6)."""

from __future__ import annotations

import json
import re
import time

import pytest

from tests.support.db import sql
from tests.support.http import JSON_TYPE, error, raw_request
from tests.support.server import RunningServer

pytestmark = pytest.mark.in_process

INVALID_ID = error("invalid_session_id", "Invalid session ID")
TOO_LONG_ID = error("invalid_session_id", "Session ID too long")
INVALID_JSON = error(None, "Invalid JSON in request body")
NOT_OBJECT = error(None, "Request body must be a JSON object")


def create(server: RunningServer, body: object):
    return server.client.post("/api/sessions", json=body)


def create_raw(server: RunningServer, body: bytes, headers: dict[str, str] | None = None):
    return raw_request(server, "POST", "/api/sessions", body, headers)


def exists(server: RunningServer, session_id: str) -> bool:
    return bool(sql(server.db_path, "SELECT 1 FROM sessions WHERE id = ?", session_id))


def test_t10_empty_body_gets_a_generated_id_and_defaults(server: RunningServer) -> None:
    before = time.time()
    r = create(server, {})
    assert r.status_code == 201
    assert r.headers["content-type"] == JSON_TYPE
    body = r.json()
    assert list(body) == ["object", "session"]
    assert body["object"] == "hermes.session"
    session = body["session"]
    assert re.fullmatch(r"api_\d+_[0-9a-f]{8}", session["id"])
    assert abs(int(session["id"].split("_")[1]) - before) <= 2
    started = session.pop("started_at")
    assert isinstance(started, float) and before - 1 <= started <= time.time() + 1
    assert session == {
        "id": session["id"], "source": "api_server", "user_id": None, "model": "hermes-agent", "title": None,
        "ended_at": None, "end_reason": None, "message_count": 0, "tool_call_count": 0, "input_tokens": 0,
        "output_tokens": 0, "cache_read_tokens": 0, "cache_write_tokens": 0, "reasoning_tokens": 0,
        "estimated_cost_usd": None, "actual_cost_usd": None, "api_call_count": 0, "parent_session_id": None,
        "has_system_prompt": False, "has_model_config": False,
    }
    assert list(r.json()["session"])[:6] == ["id", "source", "user_id", "model", "title", "started_at"]
    assert "last_active" not in session and "preview" not in session and "_lineage_root_id" not in session


def test_generated_ids_differ(server: RunningServer) -> None:
    ids = {create(server, {}).json()["session"]["id"] for _ in range(3)}
    assert len(ids) == 3


def test_response_bytes_are_aiohttp_json(server: RunningServer) -> None:
    r = create_raw(server, json.dumps({"id": "cr-bytes-\u00e9", "title": "caf\u00e9 \u6f22"}).encode())
    assert r.status == 201
    assert b'"id": "cr-bytes-\\u00e9"' in r.body
    assert b'"title": "caf\\u00e9 \\u6f22"' in r.body
    assert r.body.startswith(b'{"object": "hermes.session", "session": {"id": ')
    assert r.has_security_headers()


@pytest.mark.parametrize(
    "bad",
    ["   ", "a..b", "a/b", "a\\b", "C:x", "C:", "\u00e9:x", "a:b", "..", "x/", "t\nb", "t\rb", "t\x00b", "\t \n"],
)
def test_t11_t12_t16b_invalid_ids(server: RunningServer, bad: str) -> None:
    r = create(server, {"id": bad})
    assert (r.status_code, r.json()) == (400, INVALID_ID)


@pytest.mark.parametrize("bad", ["t\tb", "\x01x", "x\x7f", "x\x85y", "x\x9f", "a\x0bb", "\x1b[0m"])
def test_t16_d3_every_control_character_is_refused(server: RunningServer, bad: str) -> None:
    """D3: 0.19.0 accepts these; hermes-server refuses Unicode Cc on create."""
    r = create(server, {"id": bad})
    assert (r.status_code, r.json()) == (400, INVALID_ID)
    assert not exists(server, bad.strip())


def test_d6_lone_surrogate_id_is_refused_before_any_write(server: RunningServer) -> None:
    count = sql(server.db_path, "SELECT COUNT(*) FROM sessions")[0][0]
    r = create_raw(server, b'{"id": "x\\ud800y"}')
    assert (r.status, r.json()) == (400, INVALID_ID)
    assert sql(server.db_path, "SELECT COUNT(*) FROM sessions")[0][0] == count


@pytest.mark.parametrize(
    ("body", "session_id"),
    [
        ({"id": "ab:x"}, "ab:x"),  # T13
        ({"id": ":x"}, ":x"),
        ({"id": "1:x"}, "1:x"),
        ({"id": "cr-zw\u200bsp"}, "cr-zw\u200bsp"),  # format characters stay accepted under D3
        ({"id": "  cr-pad  "}, "cr-pad"),  # T17
        ({"id": 123}, "123"),  # T18
        ({"id": True}, "True"),
        ({"id": 1.5}, "1.5"),
        ({"id": [7]}, "[7]"),
        ({"id": "", "session_id": "cr-S2"}, "cr-S2"),  # T19
        ({"id": "cr-ID1", "session_id": "cr-ID2"}, "cr-ID1"),  # T19b
        ({"id": 0, "session_id": "cr-zero"}, "cr-zero"),
        ({"session_id": "cr-viaSid"}, "cr-viaSid"),
        ({"id": "\u00a0cr-nbsp\u3000"}, "cr-nbsp"),
        ({"id": "cr-caf\u00e9-\U0001f600"}, "cr-caf\u00e9-\U0001f600"),
    ],
)
def test_id_selection(server: RunningServer, body: dict, session_id: str) -> None:
    r = create(server, body)
    assert r.status_code == 201, r.text
    assert r.json()["session"]["id"] == session_id
    assert exists(server, session_id)


@pytest.mark.parametrize("falsy", [{"id": ""}, {"id": 0}, {"id": False}, {"id": []}, {"id": None}, {"id": {}},
                                   {"id": "", "session_id": ""}])
def test_falsy_ids_generate_one(server: RunningServer, falsy: dict) -> None:
    r = create(server, falsy)
    assert r.status_code == 201
    assert re.fullmatch(r"api_\d+_[0-9a-f]{8}", r.json()["session"]["id"])


def test_t14_length_limit(server: RunningServer) -> None:
    assert (create(server, {"id": "x" * 257}).json()) == TOO_LONG_ID
    assert create(server, {"id": "x" * 257}).status_code == 400
    assert create(server, {"id": "y" * 256}).status_code == 201  # T14b
    assert create(server, {"id": "  " + "w" * 256 + "  "}).status_code == 201  # counted after trimming
    assert create(server, {"id": "\U0001f600" * 256}).status_code == 201  # code points, not bytes
    assert create(server, {"id": "\U0001f601" * 257}).json() == TOO_LONG_ID


def test_t15_path_check_precedes_length_check(server: RunningServer) -> None:
    r = create(server, {"id": ".." + "x" * 257})
    assert (r.status_code, r.json()) == (400, INVALID_ID)
    assert create(server, {"id": "\t" + "z" * 300 + "\t"}).json() == TOO_LONG_ID  # trimmed TAB is not inside
    assert create(server, {"id": "z\t" + "z" * 300}).json() == INVALID_ID  # D3 (0.19.0: "too long")


def test_t20_duplicate_id_is_409_and_writes_nothing(server: RunningServer) -> None:
    assert create(server, {"id": "cr-dup", "title": "cr dup title"}).status_code == 201
    r = create(server, {"id": "cr-dup", "title": "other title", "system_prompt": "changed"})
    assert (r.status_code, r.json()) == (409, error("session_exists", "Session already exists: cr-dup"))
    row = server.client.get("/api/sessions/cr-dup").json()["session"]
    assert row["title"] == "cr dup title" and row["has_system_prompt"] is False
    assert create(server, {"id": "  cr-dup "}).json() == error("session_exists", "Session already exists: cr-dup")
    assert create(server, {"id": "CR-DUP"}).status_code == 201  # ids are case-sensitive


def test_t21_duplicate_title_removes_the_new_row(server: RunningServer) -> None:
    assert create(server, {"id": "cr-A", "title": "cr Case"}).status_code == 201
    r = create(server, {"id": "cr-B", "title": "cr Case"})
    assert (r.status_code, r.json()) == (400, error("invalid_title", "Title already in use by session cr-A"))
    assert server.client.get("/api/sessions/cr-B").status_code == 404
    # After sanitising it is the same title.
    r = create(server, {"id": "cr-B3", "title": "  cr\u200b  Case\n"})
    assert r.json() == error("invalid_title", "Title already in use by session cr-A")
    assert not exists(server, "cr-B3")
    # Uniqueness is case-sensitive.
    assert create(server, {"id": "cr-B2", "title": "CR CASE"}).json()["session"]["title"] == "CR CASE"


def test_create_never_takes_a_title_from_a_compression_ancestor(server: RunningServer) -> None:
    assert create(server, {"id": "cr-anc", "title": "cr ancestor"}).status_code == 201
    server.client.patch("/api/sessions/cr-anc", json={"end_reason": "compression"})
    r = create(server, {"id": "cr-anc-2", "title": "cr ancestor"})
    assert r.json() == error("invalid_title", "Title already in use by session cr-anc")


def test_t22_d1_title_too_long_is_400_and_leaves_no_row(server: RunningServer) -> None:
    """D1: 0.19.0 answers a text/plain 500 (rolled back)."""
    r = create(server, {"id": "cr-T101", "title": "t" * 101})
    assert (r.status_code, r.json()) == (400, error("invalid_title", "Title too long (101 chars, max 100)"))
    assert r.headers["content-type"] == JSON_TYPE
    assert server.client.get("/api/sessions/cr-T101").status_code == 404
    r = create(server, {"id": "cr-TD", "title": {"k": "v" * 100}})  # str() of the dict is 109 characters
    assert r.json() == error("invalid_title", "Title too long (109 chars, max 100)")
    assert not exists(server, "cr-TD")


def test_title_too_long_on_a_taken_id_is_409(server: RunningServer) -> None:
    create(server, {"id": "cr-taken"})
    assert create(server, {"id": "cr-taken", "title": "t" * 300}).status_code == 409


@pytest.mark.parametrize(
    ("title", "stored"),
    [
        ("u" * 100, "u" * 100),  # T23
        ("  a\x01b\t\tc\u200bd\n e  ", "ab cd e"),  # T24
        ("   ", None),  # T25
        (False, "False"),  # T25b
        (True, "True"),
        (0, "0"),
        ([1], "[1]"),
        ({"a": 1}, "{'a': 1}"),
        ("\u200b", None),
        ("\u00e9" * 100, "\u00e9" * 100),
        ("q" * 99 + "\u200b\u200b", "q" * 99),
        ("x\u00a0\u00a0y\u3000z\x85w", "x y z w"),
        ("v" * 50 + " \t\n " + "v" * 49, "v" * 50 + " " + "v" * 49),
        ("", None),
    ],
)
def test_title_sanitising_on_create(server: RunningServer, title: object, stored: str | None) -> None:
    session_id = f"cr-title-{abs(hash(json.dumps(title))) % 10**9}"
    r = create(server, {"id": session_id, "title": title})
    assert r.status_code == 201, r.text
    assert r.json()["session"]["title"] == stored
    assert sql(server.db_path, "SELECT title FROM sessions WHERE id = ?", session_id) == [(stored,)]


def test_t25c_nan_and_infinity_titles(server: RunningServer) -> None:
    r = create_raw(server, b'{"id": "cr-TN", "title": NaN}')
    assert r.status == 201 and r.json()["session"]["title"] == "nan"
    r = create_raw(server, b'{"id": "cr-TI", "title": -Infinity}')
    assert r.status == 201 and r.json()["session"]["title"] == "-inf"


def test_lone_surrogate_title_is_repaired(server: RunningServer) -> None:
    r = create_raw(server, b'{"id": "cr-TS", "title": "q\\ud800r"}')
    assert r.status == 201
    assert r.json()["session"]["title"] == "q\ufffdr"


def test_null_title_is_no_title(server: RunningServer) -> None:
    assert create(server, {"id": "cr-null-title", "title": None}).json()["session"]["title"] is None


@pytest.mark.parametrize("prompt", [5, ["a"], {"a": 1}, True, 1.5])
def test_t26_system_prompt_must_be_a_string(server: RunningServer, prompt: object) -> None:
    session_id = f"cr-SPI-{type(prompt).__name__}"
    r = create(server, {"id": session_id, "system_prompt": prompt})
    assert (r.status_code, r.json()) == (400, error("invalid_system_prompt", "system_prompt must be a string"))
    assert not exists(server, session_id)


def test_t29_system_prompt_is_stored_but_never_shown(server: RunningServer) -> None:
    r = create(server, {"id": "cr-SPS", "system_prompt": "be brief"})
    assert r.json()["session"]["has_system_prompt"] is True
    assert "system_prompt" not in r.json()["session"]
    assert sql(server.db_path, "SELECT system_prompt FROM sessions WHERE id = 'cr-SPS'") == [("be brief",)]
    r = create(server, {"id": "cr-SPE", "system_prompt": ""})
    assert r.json()["session"]["has_system_prompt"] is False
    assert sql(server.db_path, "SELECT system_prompt FROM sessions WHERE id = 'cr-SPE'") == [("",)]
    assert create(server, {"id": "cr-SPN", "system_prompt": None}).status_code == 201


@pytest.mark.parametrize("field", ["system_prompt", "model"])
def test_d6_unstorable_text_is_a_400_naming_the_field(server: RunningServer, field: str) -> None:
    """D6: 0.19.0 fails with a text/plain 500 when SQLite cannot encode the value."""
    session_id = f"cr-D6-{field}"
    r = create_raw(server, json.dumps({"id": session_id, field: "\\udc00"}).replace("\\\\", "\\").encode())
    assert r.status == 400
    assert r.json() == error(None, f"Invalid value for '{field}': text must be valid Unicode", field)
    assert not exists(server, session_id)


@pytest.mark.parametrize(
    ("model", "stored"),
    [(42, "42"), (False, "hermes-agent"), ("", "hermes-agent"), (None, "hermes-agent"), ([], "hermes-agent"),
     ("custom-model", "custom-model"), ([1], "[1]"), (1.0, "1.0")],
)
def test_t28_model(server: RunningServer, model: object, stored: str) -> None:
    session_id = f"cr-M-{abs(hash(json.dumps(model))) % 10**9}"
    r = create(server, {"id": session_id, "model": model})
    assert r.status_code == 201
    assert r.json()["session"]["model"] == stored


def test_unknown_fields_are_ignored_and_columns_default(server: RunningServer) -> None:
    r = create(server, {"id": "cr-extra", "source": "cli", "user_id": "u", "parent_session_id": "x",
                        "end_reason": "x", "message_count": 9})
    assert r.status_code == 201
    s = r.json()["session"]
    assert (s["source"], s["user_id"], s["parent_session_id"], s["end_reason"], s["message_count"]) == (
        "api_server", None, None, None, 0)
    row = sql(server.db_path, "SELECT model_config, archived, rewind_count, compression_fallback_streak, "
                              "expiry_finalized FROM sessions WHERE id = 'cr-extra'")
    assert row == [(None, 0, 0, 0, 0)]


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        (b"{bad", INVALID_JSON),  # T27
        (b"", INVALID_JSON),  # T27b
        (b"[1,2]", NOT_OBJECT),  # T27c
        (b'"str"', NOT_OBJECT),
        (b"null", NOT_OBJECT),
        (b"5", NOT_OBJECT),
        (b"NaN", NOT_OBJECT),
        (b"\xef\xbb\xbf{}", INVALID_JSON),  # a UTF-8 BOM fails, as Python's json.loads(str) does
        (b'{"id": "\xff"}', INVALID_JSON),  # not UTF-8
        (b"{} {}", INVALID_JSON),
        (b"[" * 100_000 + b"]" * 100_000, INVALID_JSON),  # too deep to parse
        (b"  {}  \n", None),
    ],
)
def test_t27_json_bodies(server: RunningServer, raw: bytes, expected: dict | None) -> None:
    r = create_raw(server, raw)
    if expected is None:
        assert r.status == 201
    else:
        assert (r.status, r.json()) == (400, expected)
        assert r.has_security_headers()


def test_t30_content_type_is_not_checked(server: RunningServer) -> None:
    for i, ctype in enumerate(["text/plain", "application/x-www-form-urlencoded", "image/png"]):
        r = create_raw(server, json.dumps({"id": f"cr-tp-{i}"}).encode(), {"Content-Type": ctype})
        assert r.status == 201
    assert raw_request(server, "POST", "/api/sessions", b'{"id": "cr-no-ctype"}').status == 201


def test_charset_of_the_content_type_decodes_the_body(server: RunningServer) -> None:
    r = create_raw(server, b'{"id": "cr-caf\xe9"}', {"Content-Type": "application/json; charset=latin-1"})
    assert r.status == 201 and r.json()["session"]["id"] == "cr-caf\u00e9"
    r = create_raw(server, b'{"id": "cr-cs"}', {"Content-Type": "application/json; charset=bogus-enc"})
    assert (r.status, r.json()) == (400, INVALID_JSON)


def test_duplicate_keys_last_wins(server: RunningServer) -> None:
    r = create_raw(server, b'{"id": "cr-first", "id": "cr-last"}')
    assert r.json()["session"]["id"] == "cr-last"


def test_concurrent_creates_of_one_id_give_one_201(server: RunningServer) -> None:
    import concurrent.futures

    with concurrent.futures.ThreadPoolExecutor(8) as pool:
        codes = list(pool.map(lambda _: create(server, {"id": "cr-race"}).status_code, range(8)))
    assert sorted(codes) == [201] + [409] * 7
