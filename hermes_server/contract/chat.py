"""Scenarios of session chat and fork: `POST /api/sessions/{id}/chat`, `/chat/stream`, `/fork`.

One session turn by turn, every validation error on both routes, an ended session, and the
fork rules (ids, derived titles, what the source's `/messages` shows after a fork: D2).
Streams are compared event by event, JSON after masking ids, clocks, usage and the agent's
words (`masks.SessionChat`).
"""

from __future__ import annotations

from typing import Any

from hermes_server.contract.masks import CONT, GEN, MSG, RUN, Masks, SessionChat
from hermes_server.contract.steps import Builder, Names, Need, Step

WRITES, CHAT, MORE = Need.WRITES, Need.CHAT, Need.MORE_TURNS
MASKS = Masks(timestamps=frozenset({"started_at", "ended_at", "last_active", "timestamp", "ts"}),
              counters=frozenset({"input_tokens", "output_tokens", "total_tokens"}), ids=(GEN, CONT, RUN, MSG))


def normaliser() -> SessionChat:
    return SessionChat(MASKS)


def scenarios(n: Names) -> list[Step]:
    c = Builder(n)
    i = n.id
    s = f"/api/sessions/{i('S')}"

    def post(name: str, path: str, body: Any, **kwargs: Any) -> None:
        c.add(name, "POST", path, body, **kwargs)

    c.section("a session chat turn, plain and streamed: the answer, the stored rows, the history", WRITES)
    post("create S", "/api/sessions", {"id": i("S"), "title": i("Chat seq"), "system_prompt": "create-time"})
    post("T79 chat with key and instruction", f"{s}/chat", {"message": "hello there", "system_message": "be brief"},
         headers={"X-Hermes-Session-Key": i("mem:1")}, needs=[CHAT])
    c.add("get S after chat", "GET", s)
    c.add("messages S after chat", "GET", f"{s}/messages")
    post("second chat uses history", f"{s}/chat", {"message": "second", "instructions": "terse"}, needs=[MORE])
    post("T100 stream with key", f"{s}/chat/stream", {"message": "stream me"},
         headers={"X-Hermes-Session-Key": i("mk")}, needs=[CHAT])
    c.add("messages S after stream", "GET", f"{s}/messages")
    c.add("get S after stream", "GET", s)
    c.add("list after chats", "GET", "/api/sessions", listing=True)
    post("T92 text list", f"{s}/chat",
         {"message": ["a", {"type": "input_text", "text": "b"}, {"type": "output_text", "text": 5}, 7, None]},
         needs=[MORE])
    mm = f"/api/sessions/{i('MM')}"
    post("create MM", "/api/sessions", {"id": i("MM")})
    post("T91 multimodal", f"{mm}/chat", {"message": [
        {"type": "text", "text": "look"}, {"type": "input_image", "image_url": " HTTPS://x/y.png ", "detail": "low"},
        {"type": "text", "text": "more"}]}, needs=[MORE])
    c.add("multimodal user row", "GET", f"{mm}/messages")
    post("stream on an empty session", f"{mm}/chat/stream", {"input": "via input"}, needs=[MORE])

    c.section("session chat input that is refused (every validation error, on /chat and /chat/stream)", WRITES)
    invalid: list[tuple[str, Any]] = [
        ("T81 empty body object", {}), ("T82 blank message blocks input", {"message": "   ", "input": "x"}),
        ("T83 prompt not read", {"prompt": "x"}), ("T84 bare strings", {"message": ["hello"]}),
        ("T84b dict", {"message": {"text": "hi"}}), ("T84b number", {"message": 5}),
        ("T85 file part", {"message": [{"type": "text", "text": "a"}, {"type": "file", "file_id": "x"}]}),
        ("T85b only a file part", {"message": [{"type": "input_file"}]}),
        ("T86 audio", {"message": [{"type": "text", "text": "a"}, {"type": "audio"}]}),
        ("missing type", {"message": [{"type": "text", "text": "a"}, {"text": "b"}]}),
        ("T87 ftp", {"message": [{"type": "image_url", "image_url": {"url": "ftp://x"}}]}),
        ("T88 data text", {"message": [{"type": "image_url", "image_url": {"url": "data:text/plain,abc"}}]}),
        ("T88b no comma", {"message": [{"type": "input_image", "image_url": "data:image/png;base64"}]}),
        ("T89 blank url", {"message": [{"type": "image_url", "image_url": {"url": "  "}}]}),
        ("T90 blank detail", {"message": [{"type": "image_url", "image_url": {"url": "http://x", "detail": ""}}]}),
        ("T94 system_message 5", {"message": "hi", "system_message": 5}),
        ("T94b instructions 5", {"message": "hi", "instructions": 5}),
        ("instructions 0 after empty system_message", {"message": "hi", "system_message": "", "instructions": 0}),
        ("T103 empty message", {"message": ""}),
    ]
    for route in ("chat", "chat/stream"):
        for name, body in invalid:
            post(f"{name} ({route})", f"{s}/{route}", body)
        post(f"bad JSON ({route})", f"{s}/{route}", b"{bad")
        post(f"not an object ({route})", f"{s}/{route}", b"[1]")
        post(f"T96/T104 404 before body ({route})", f"/api/sessions/{i('NOPE')}/{route}", b"nope", safe=True)
        post(f"T6 long session key before 404 ({route})", f"/api/sessions/{i('NOPE')}/{route}", {"message": "hi"},
             headers={"X-Hermes-Session-Key": n.fill("k", 257)}, safe=True)
        post(f"256-char session key ({route})", f"{mm}/{route}", {"message": "hi"},
             headers={"X-Hermes-Session-Key": n.fill("k", 256)}, needs=[MORE])
    c.add("S unchanged by refused turns", "GET", s)

    c.section("chat on an ended session", WRITES)
    e = f"/api/sessions/{i('E')}"
    post("create E", "/api/sessions", {"id": i("E"), "title": i("Ended")})
    c.add("close E", "PATCH", e, {"end_reason": "client_closed"})
    post("T99 chat on ended session", f"{e}/chat", {"message": "still there?"}, needs=[MORE])
    c.add("E stays ended", "GET", e)

    c.section("forking a session: ids, derived titles, what the source shows afterwards", WRITES)
    post("T66 fork onto existing", f"{s}/fork", {"id": i("E")})
    post("T67 fork onto itself", f"{s}/fork", {"id": i("S")})
    post("T68 blank fork id", f"{s}/fork", {"id": "   "})
    post("T68 newline fork id", f"{s}/fork", {"id": i("a\nb")})
    post("T69 fork bad JSON", f"{s}/fork", b"[")
    post("T69b fork 404 before body", f"/api/sessions/{i('NOPE')}/fork", b"{", safe=True)
    c.add("S still open", "GET", s)
    post("T70 fork derived title", f"{s}/fork", {})
    c.add("S branched", "GET", s)
    fd = f"/api/sessions/{i('FD')}"
    post("T72 fork duplicate title", f"{s}/fork", {"id": i("FD"), "title": i("Chat seq")})
    c.add("T72 child exists after 400", "GET", fd)
    c.add("T72 child messages after 400", "GET", f"{fd}/messages")
    post("chat on the fork child", f"{fd}/chat", {"message": "child turn"}, needs=[MORE])
    c.add("child messages after its turn", "GET", f"{fd}/messages")
    c.add("child after its turn", "GET", fd)
    post("T71 lax fork id", f"{s}/fork", {"id": i("../evil"), "title": ""})
    c.add("T62 source messages after forks", "GET", f"{s}/messages", deviation="D2")
    post("stream on the fork child", f"{fd}/chat/stream", {"message": "child stream"}, needs=[MORE])
    l98 = f"/api/sessions/{i('L98')}"
    post("create L98", "/api/sessions", {"id": i("L98"), "title": n.fill("t", 98)})
    post("L98 turn", f"{l98}/chat", {"message": "fill"}, needs=[MORE])
    post("T74 derived title too long", f"{l98}/fork", {"id": i("L98c")})
    c.add("T74 child exists", "GET", f"/api/sessions/{i('L98c')}")
    c.add("T74 child messages", "GET", f"/api/sessions/{i('L98c')}/messages")
    c.add("list after forks", "GET", "/api/sessions?limit=200&include_children=1", listing=True)
    return c.steps
