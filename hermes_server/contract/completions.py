"""Scenarios of `POST /v1/chat/completions`: turns in derived and named sessions, the session
headers, every refusal, `Idempotency-Key` replays, and a server without a key.

A derived session's id hashes the conversation's system prompt and first user message, so
every first message of a turn carries the run's prefix (`Names.text`). Streams are compared
chunk by chunk, a run of content chunks as one (`masks.Completions`).
"""

from __future__ import annotations

from typing import Any

from hermes_server.contract.masks import Completions, Masks
from hermes_server.contract.steps import Builder, Names, Need, Step

PATH = "/v1/chat/completions"
WRITES, CHAT, MORE = Need.WRITES, Need.CHAT, Need.MORE_TURNS
MASKS = Masks(timestamps=frozenset({"created", "started_at", "ended_at", "last_active", "timestamp"}),
              counters=frozenset({"prompt_tokens", "completion_tokens", "total_tokens", "input_tokens",
                                  "output_tokens"}), completion_ids=True)


def normaliser() -> Completions:
    return Completions(MASKS)


def scenarios(n: Names) -> list[Step]:
    c = Builder(n)
    i, t = n.id, n.text

    def add(name: str, body: Any = None, **kwargs: Any) -> None:
        kwargs.setdefault("method", "POST")
        kwargs.setdefault("path", PATH)
        if kwargs.pop("bare_auth", False):
            kwargs["auth"] = None
        c.add(name, kwargs.pop("method"), kwargs.pop("path"), body, **kwargs)

    def msgs(*contents: Any) -> dict[str, Any]:
        return {"messages": [{"role": "user", "content": content} for content in contents]}

    c.section("a chat completion in the session its conversation derives", WRITES, MORE)
    add("system + user", {"messages": [{"role": "system", "content": "be nice"},
                                       {"role": "user", "content": t("hello there")}]}, needs=[CHAT])
    add("same conversation, next turn", {"messages": [
        {"role": "system", "content": "be nice"}, {"role": "user", "content": t("hello there")},
        {"role": "assistant", "content": "earlier reply"}, {"role": "user", "content": "second"}]})
    add("fresh conversation with client history", {"messages": [
        {"role": "user", "content": t("fresh first")}, {"role": "assistant", "content": "fake"},
        {"role": "user", "content": "fresh second"}]})
    add("stream", {"stream": True, "model": "foo", "messages": [{"role": "user", "content": t("hello stream")}]},
        needs=[CHAT])
    add("stream, non-ASCII text", {"stream": True, "messages": [{"role": "user", "content": t("héllo ✓")}]})
    add("multimodal", {"messages": [{"role": "user", "content": [
        {"type": "text", "text": t("look")}, {"type": "image_url", "image_url": {"url": "https://e.x/a.png"}}]}]})
    add("bare string parts", msgs([t("bare string")]))
    add("system parts flattened", {"messages": [
        {"role": "system", "content": [{"type": "zzz"}, "sys", {"type": "text", "text": "tem"}]},
        {"role": "user", "content": t("x")}]})
    add("other roles ignored", {"messages": [
        {"role": "developer", "content": "d"}, {"role": "user", "content": t("u1")},
        {"role": "tool", "content": "t"}, {"role": 1, "content": "n"}]})
    add("assistant message last", {"messages": [
        {"role": "user", "content": t("q1")}, {"role": "assistant", "content": "assistant last"}]})
    content: Any
    for name, content in (("number", 5), ("dict", {"a": 1}), ("bool", True)):
        add(f"content {name}", msgs(content), needs=[Need.BARE_NAMES])
    for name, model in (("null", None), ("number", 5), ("list", [1]), ("dict", {"a": 1})):
        add(f"model {name}", {"model": model, "messages": [{"role": "user", "content": t("x")}]})
    for name, flag in (("'false'", "false"), ("'yes'", "yes"), ("1", 1), ("[1]", [1]), ("'maybe'", "maybe")):
        add(f"stream {name}", {"stream": flag, "messages": [{"role": "user", "content": t(f"s {name}")}]})

    c.section("X-Hermes-Session-Id: continuing a named session, creating one, the ids refused", WRITES)
    s = {"X-Hermes-Session-Id": i("S")}
    add("create S", {"id": i("S"), "title": i("Completions")}, path="/api/sessions")
    add("continue S (body history ignored)", {"messages": [
        {"role": "user", "content": "a"}, {"role": "assistant", "content": "b"},
        {"role": "user", "content": "turn one"}]}, headers=s, needs=[MORE])
    add("continue S streamed", {"stream": True, "messages": [{"role": "user", "content": "turn two"}]}, headers=s,
        needs=[MORE])
    add("S messages", method="GET", path=f"/api/sessions/{i('S')}/messages")
    add("S row", method="GET", path=f"/api/sessions/{i('S')}")
    add("header creates a session", msgs("new one"), headers={"X-Hermes-Session-Id": i("brand-new")}, needs=[MORE])
    add("created session row", method="GET", path=f"/api/sessions/{i('brand-new')}")
    keyed = {"X-Hermes-Session-Id": i("keyed"), "X-Hermes-Session-Key": i("c-1")}
    add("header with key", msgs("keyed"), headers=keyed, needs=[MORE])
    add("stream with key", {"stream": True, **msgs("keyed s")}, headers=keyed, needs=[MORE])
    add("blank header derives", msgs(t("blank sid")), headers={"X-Hermes-Session-Id": "   "}, needs=[MORE])
    add("padded header", msgs("x"), headers={"X-Hermes-Session-Id": "  " + i("padded id ")}, needs=[MORE])
    add("no-break space is blank", msgs(t("nbsp")), headers={"X-Hermes-Session-Id": "\u00a0".encode()},
        needs=[MORE])
    add("tab in header", msgs("x"), headers={"X-Hermes-Session-Id": i("a\tb")}, needs=[MORE])
    add("UTF-8 header", msgs("x"), headers={"X-Hermes-Session-Id": i("é-sid").encode()}, needs=[MORE])
    add("256-char id", msgs("x"), headers={"X-Hermes-Session-Id": n.fill("b", 256)}, needs=[MORE])
    for name, sid in (("dots", "a..b"), ("slash", "a/b"), ("backslash", "a\\b"), ("drive", "c:x"),
                      ("257 chars", "b" * 257)):
        sent = sid if name == "drive" else n.fill("b", 257) if name == "257 chars" else i(sid)
        add(f"bad header id: {name}", msgs("x"), headers={"X-Hermes-Session-Id": sent},
            needs=[Need.BARE_NAMES] if name == "drive" else [])
    add("session key too long", msgs("x"), headers={"X-Hermes-Session-Key": n.fill("k", 257)})
    add("key checked before id", msgs("x"),
        headers={"X-Hermes-Session-Id": i("a/b"), "X-Hermes-Session-Key": n.fill("k", 257)})
    add("messages checked before key", {}, headers={"X-Hermes-Session-Key": n.fill("k", 257)}, safe=True)
    add("stream refused before it starts", {"stream": True, "messages": []}, headers=s, safe=True)

    c.section("chat completions that are refused: auth, bodies, messages, content parts", WRITES)
    body: Any
    add("no auth", msgs("x"), bare_auth=True, safe=True)
    add("wrong key", msgs("x"), bare_auth=True, headers={"Authorization": "Bearer wrong-key-0123456789"}, safe=True)
    add("no body", b"", safe=True)
    add("bad JSON", b"{x", safe=True)
    add("GET", method="GET", safe=True)
    add("413 by Content-Length", b"{}", headers={"Content-Length": "10000001"}, safe=True)
    for name, body in (("no messages", {}), ("empty list", {"messages": []}), ("messages string", {"messages": "hi"}),
                       ("messages object", {"messages": {"role": "user"}}), ("only system", {"messages": [
                           {"role": "system", "content": "x"}]}), ("blank user", msgs("  ")), ("null content", msgs(None))):
        add(name, body, safe=name in ("no messages", "empty list", "messages string", "messages object"))
    for name, body in (("body array", b"[1]"), ("body string", b'"x"'), ("message string", {"messages": ["hi"]}),
                       ("message null", {"messages": [None]}), ("role list", {"messages": [
                           {"role": ["user"], "content": "x"}]})):
        add(name, body, deviation="D6", safe=isinstance(body, bytes))
    parts = {
        "file part": [{"type": "file", "file": {}}],
        "unknown part": [{"type": "audio"}],
        "ftp image": [{"type": "image_url", "image_url": {"url": "ftp://x"}}],
        "empty url": [{"type": "image_url", "image_url": {}}],
        "non-image data": [{"type": "image_url", "image_url": "data:text/plain,abc"}],
        "blank detail": [{"type": "image_url", "image_url": {"url": "https://x/y.png", "detail": ""}}],
    }
    for name, content in parts.items():
        add(f"bad content: {name}", {"messages": [{"role": "user", "content": "ok"},
                                                  {"role": "assistant", "content": content}]})

    c.section("Idempotency-Key on chat completions: a replay, another request, streams", WRITES, MORE)
    idem = {"Idempotency-Key": i("idem-1")}
    add("idempotent first", msgs("idem turn"), headers={**idem, "X-Hermes-Session-Id": i("idem")})
    add("idempotent replay", msgs("idem turn"), headers={**idem, "X-Hermes-Session-Id": i("idem")})
    add("replay to another session", msgs("idem turn"),
        headers={**idem, "X-Hermes-Session-Id": i("idem-other"), "X-Hermes-Session-Key": i("kk")})
    add("same key, other request", msgs("idem turn 2"), headers={**idem, "X-Hermes-Session-Id": i("idem")})
    add("idem messages", method="GET", path=f"/api/sessions/{i('idem')}/messages")
    add("idem-other never written", method="GET", path=f"/api/sessions/{i('idem-other')}")
    for k in (1, 2):
        add(f"streams ignore the key ({k})", {"stream": True, **msgs(t("idem s"))},
            headers={"Idempotency-Key": i("idem-s")})

    c.section("chat completions on a server without a key")
    add("no key: plain turn", msgs("open"), pair="nokey")
    add("no key: session id refused", msgs("x"), headers={"X-Hermes-Session-Id": "S"}, pair="nokey")
    add("no key: session key refused", msgs("x"), headers={"X-Hermes-Session-Key": "k"}, pair="nokey")
    add("no key: messages first", {}, headers={"X-Hermes-Session-Id": "S"}, pair="nokey")
    add("no key: blank id is no id", msgs("open 2"), headers={"X-Hermes-Session-Id": " "}, pair="nokey")
    add("no key: no-break space is blank", msgs("open 3"), headers={"X-Hermes-Session-Id": "\u00a0".encode()},
        pair="nokey")
    return c.steps
