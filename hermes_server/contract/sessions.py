"""Scenarios of the session resource routes: health, auth, create, list, get, patch, messages,
fork, delete, the body limit, request heads, path decoding, a server without a key, an unopenable
state.db.

The request table (364 steps), kept in one file so the whole set reads top to bottom. Compared
byte for byte after masking timestamps and generated ids (`masks.BodyBytes`). Rows the API
cannot create (compression chains, delegates, archived rows, rewound transcripts) are seeded on
both sides by upstream's own SessionDB (`Need.SEEDED`).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any
from urllib.parse import quote

from hermes_server.contract.steps import Builder, Names, Need, Step, js

LIMIT = 10_000_000
HEAD_FIELD = 8190  # 0.19.0's most bytes of a request target and of a header value
WRITES, SEEDED, BARE = Need.WRITES, Need.SEEDED, Need.BARE_NAMES


def envelope(code: str | None, message: str, param: Any = None) -> dict[str, Any]:
    return {"error": {"message": message, "type": "invalid_request_error", "param": param, "code": code}}


def scenarios(n: Names) -> list[Step]:
    """The request sequence; ids are unique so order only matters where a step says so."""
    c = Builder(n)
    add = c.add
    i, p = n.id, n.prefix
    bad_bearer = b"Bearer \xff\xfe-not-utf8"

    def raw(template: str) -> bytes:
        """A body written as JSON text (escapes a dict cannot hold), `{p}` the prefix."""
        return template.replace("{p}", p).encode()

    def sid(path_id: str) -> str:
        return f"/api/sessions/{path_id}"

    def lead(name: str) -> str:
        """`name` with the prefix after its leading whitespace (which a create trims)."""
        body = name.lstrip()
        return name[:len(name) - len(body)] + i(body)

    def bare(name: str) -> bool:
        """A prefix would make a blank id valid, or move a drive letter (`C:`) off the start."""
        return name.strip() == "" or name[1:2] == ":"

    c.section("health and authentication: /health, the bearer key, the 401 envelope, CORS")
    add("health", "GET", "/health", auth=None)
    add("v1 health", "GET", "/v1/health", auth=None)
    add("T1 no auth", "GET", "/api/sessions", auth=None)
    add("T2 lower-case bearer", "GET", "/api/sessions", auth="bearer {key}", listing=True)
    add("T3 padded bearer", "GET", "/api/sessions", auth="Bearer    {key}   ", listing=True)
    add("bearer with tab", "GET", "/api/sessions", auth="Bearer\t{key}", listing=True)
    add("wrong key", "GET", "/api/sessions", auth="Bearer wrong-key-0123456789abcdef")
    add("basic auth", "GET", "/api/sessions", auth="Basic abc")
    add("D5 non-UTF-8 bearer", "GET", "/api/sessions", auth=bad_bearer, deviation="D5",
        declared=(401, {"error": {"message": "Invalid API key", "type": "invalid_request_error",
                                  "code": "invalid_api_key"}}))
    add("T9 foreign Origin", "GET", "/api/sessions", headers={"Origin": "https://evil"}, listing=True)
    add("OPTIONS with Origin", "OPTIONS", "/api/sessions", headers={"Origin": "https://evil"})
    add("OPTIONS without Origin", "OPTIONS", "/api/sessions")
    add("T7 long session key off chat", "GET", sid(i("nope-t7")), headers={"X-Hermes-Session-Key": n.fill("k", 300)})
    add("health with bad auth", "GET", "/health", auth="Bearer nope")
    add("UTF-8 non-ASCII bearer", "GET", "/api/sessions", auth="Bearer caf\u00e9".encode())
    add("bearer without a token", "GET", "/api/sessions", auth="Bearer ")
    add("HEAD /health", "HEAD", "/health", auth=None)
    add("HEAD on a session", "HEAD", sid(i("x")))

    c.section("creating a session: which ids are accepted, trimmed or refused", WRITES)
    add("T10 create {}", "POST", "/api/sessions", js({}))
    for k, bad in enumerate(["   ", "a..b", "a/b", "a\\b", "C:x", "\u00e9:x", "a:b", "C:", "..",
                             "t\nb", "t\rb", "t\x00b"]):
        add(f"T11/T12/T16b invalid id #{k} {bad!r}", "POST", "/api/sessions", js({"id": bad if bare(bad) else i(bad)}),
            needs=[BARE] if bare(bad) else [])
    add("T13 ab:x", "POST", "/api/sessions", js({"id": i("ab:x")}))
    for k, ok in enumerate([":x", "1:x", "_:x", "a.b", ".", "\u2028ls\u2028in", "\u00a0nb\u00a0", " \u3000w\u3000 ",
                            "\U0001f600" * 256, "%2F", "a%2Fb-literal"]):
        sent = n.fill(ok[0], 256) if len(ok) == 256 else lead(ok)
        add(f"accepted id #{k} {ok[:12]!r}", "POST", "/api/sessions", js({"id": sent}))
    for k, bad in enumerate(["\u01c5:x", "...", "x/", " \t ", "\u00a0", "..\\x"]):
        add(f"refused id #{k} {bad!r}", "POST", "/api/sessions", js({"id": bad if bare(bad) else i(bad)}),
            needs=[BARE] if bare(bad) else [])
    add("256 after trimming", "POST", "/api/sessions", js({"id": "  " + n.fill("w", 256) + "  "}))
    add("257 astral", "POST", "/api/sessions", js({"id": n.fill("\U0001f600", 257)}))
    add("T14 257 chars", "POST", "/api/sessions", js({"id": n.fill("x", 257)}))
    add("T14b 256 chars", "POST", "/api/sessions", js({"id": n.fill("y", 256)}))
    add("T15 .. + 257", "POST", "/api/sessions", js({"id": i(".." + "x" * 257)}))
    d3 = (400, envelope("invalid_session_id", "Invalid session ID"))
    for k, ctl in enumerate(["t\tb", "\x01x", "x\x7f", "x\x85y", "x\x1fy"]):
        add(f"T16/D3 control id #{k} {ctl!r}", "POST", "/api/sessions", js({"id": i(ctl)}), deviation="D3",
            declared=d3, undo=(Step("undo", "DELETE", sid(quote(i(ctl), safe=""))),))
    add("format char id accepted", "POST", "/api/sessions", js({"id": i("zw\u200bsp")}))
    add("non-ASCII id", "POST", "/api/sessions", js({"id": i("caf\u00e9-\u6f22")}))
    add("T17 padded id", "POST", "/api/sessions", js({"id": "  " + i("pad") + "  "}))
    # Not text: the id is what str() makes of them, with no room for a prefix.
    add("T18 int id", "POST", "/api/sessions", js({"id": 123}), needs=[BARE])
    add("true id", "POST", "/api/sessions", js({"id": True}), needs=[BARE])
    add("float id", "POST", "/api/sessions", js({"id": 1.5}), needs=[BARE])
    add("T19 empty id, session_id", "POST", "/api/sessions", js({"id": "", "session_id": i("S2")}))
    add("T19b id wins", "POST", "/api/sessions", js({"id": i("ID1"), "session_id": i("ID2")}))
    add("zero id, session_id", "POST", "/api/sessions", js({"id": 0, "session_id": i("zero-sid")}))
    add("list id falls back", "POST", "/api/sessions", js({"id": []}))
    add("list id [1]", "POST", "/api/sessions", js({"id": [1]}), needs=[BARE])
    add("dict id", "POST", "/api/sessions", js({"id": {"a": 1}}), needs=[BARE])
    add("T78-like session_id only", "POST", "/api/sessions", js({"session_id": i("viaSid")}))
    add("D6 lone surrogate id", "POST", "/api/sessions", raw('{"id": "{p}x\\ud800y"}'), deviation="D6",
        declared=(400, envelope("invalid_session_id", "Invalid session ID")))
    add("T20 duplicate id", "POST", "/api/sessions", js({"id": i("pad")}))
    add("sp ace% id", "POST", "/api/sessions", js({"id": i("sp ace%")}))

    c.section("creating a session: titles, model and system prompt", WRITES)
    add("create A Case", "POST", "/api/sessions", js({"id": i("A"), "title": i("Case")}))
    add("T21 duplicate title", "POST", "/api/sessions", js({"id": i("B"), "title": i("Case")}))
    add("T21 B absent", "GET", sid(i("B")))
    add("case-sensitive title", "POST", "/api/sessions", js({"id": i("B2"), "title": i("CASE")}))
    add("dup after sanitising", "POST", "/api/sessions", js({"id": i("B3"), "title": "  " + i("Case\u200b ")}))
    add("T22/D1 title 101", "POST", "/api/sessions", js({"id": i("T101"), "title": n.fill("t", 101)}),
        deviation="D1", declared=(400, envelope("invalid_title", "Title too long (101 chars, max 100)")))
    add("T22 no row", "GET", sid(i("T101")))
    add("T23 title 100", "POST", "/api/sessions", js({"id": i("T100"), "title": n.fill("u", 100)}))
    add("T24 control title", "POST", "/api/sessions",
        js({"id": i("TC"), "title": "  " + i("a\x01b\t\tc\u200bd\n e  ")}))
    add("T25 blank title", "POST", "/api/sessions", js({"id": i("TE"), "title": "   "}))
    add("T25b false title", "POST", "/api/sessions", js({"id": i("TF"), "title": False}))
    add("T25c NaN title", "POST", "/api/sessions", raw('{"id": "{p}TN", "title": NaN}'))
    add("Infinity title", "POST", "/api/sessions", raw('{"id": "{p}TI", "title": -Infinity}'))
    add("0 title", "POST", "/api/sessions", js({"id": i("T0"), "title": 0}))
    # A title that is not text is what str() makes of it: shared with whoever else has it.
    add("[1] title", "POST", "/api/sessions", js({"id": i("TL"), "title": [1]}), needs=[BARE])
    add("dict title", "POST", "/api/sessions", js({"id": i("TD"), "title": {"a": 1}}), needs=[BARE])
    add("zero-width title", "POST", "/api/sessions", js({"id": i("TZ"), "title": "\u200b"}))
    add("100 x e-acute", "POST", "/api/sessions", js({"id": i("TE100"), "title": n.fill("\u00e9", 100)}))
    add("99 + 2 zero-width", "POST", "/api/sessions", js({"id": i("T99"), "title": n.fill("a", 99) + "\u200b\u200b"}))
    add("unicode whitespace title", "POST", "/api/sessions",
        js({"id": i("TW"), "title": i("x\u00a0\u00a0y\u3000z\x85w")}))
    add("surrogate title repaired", "POST", "/api/sessions", raw('{"id": "{p}TS", "title": "{p}q\\ud800r"}'))
    add("D1 long dict title", "POST", "/api/sessions", js({"id": i("TLD"), "title": {"k": "v" * 100}}),
        deviation="D1", declared=(400, envelope("invalid_title", "Title too long (109 chars, max 100)")))
    add("true title", "POST", "/api/sessions", js({"id": i("TT"), "title": True}), needs=[BARE])
    add("NBSP-only title", "POST", "/api/sessions", js({"id": i("TNB"), "title": "\u00a0\u2003"}))
    add("title held by a compression tip", "POST", "/api/sessions",
        js({"id": i("TH"), "title": "sd Compressed convo #3"}), needs=[SEEDED])
    add("title 100 after collapsing", "POST", "/api/sessions",
        js({"id": i("TCL"), "title": n.fill("v", 50) + " \t\n " + "v" * 49}))
    add("T26 system_prompt int", "POST", "/api/sessions", js({"id": i("SPI"), "system_prompt": 5}))
    add("system_prompt list", "POST", "/api/sessions", js({"id": i("SPL"), "system_prompt": ["a"]}))
    add("system_prompt empty", "POST", "/api/sessions", js({"id": i("SPE"), "system_prompt": ""}))
    add("T29 system_prompt", "POST", "/api/sessions", js({"id": i("SPS"), "system_prompt": "sp"}))
    add("system_prompt null", "POST", "/api/sessions", js({"id": i("SPN"), "system_prompt": None}))
    add("D6 surrogate system_prompt", "POST", "/api/sessions", raw('{"id": "{p}SPX", "system_prompt": "\\udc00"}'),
        deviation="D6", declared=(400, envelope(None, "Invalid value for 'system_prompt': text must be valid Unicode",
                                                "system_prompt")))
    add("D6 surrogate model", "POST", "/api/sessions", raw('{"id": "{p}MX", "model": "\\ud83d"}'),
        deviation="D6", declared=(400, envelope(None, "Invalid value for 'model': text must be valid Unicode",
                                                "model")))
    add("T28 int model", "POST", "/api/sessions", js({"id": i("M"), "model": 42}))
    add("false model", "POST", "/api/sessions", js({"id": i("MF"), "model": False}))
    add("named model", "POST", "/api/sessions", js({"id": i("MS"), "model": "custom-model", "extra": 1}))

    c.section("request bodies: invalid JSON, charsets, the 10,000,000-byte limit", WRITES)
    add("T27 bad JSON", "POST", "/api/sessions", b"{bad", safe=True)
    add("T27b empty body", "POST", "/api/sessions", b"")
    add("T27c array body", "POST", "/api/sessions", b"[1,2]", safe=True)
    add("string body", "POST", "/api/sessions", b'"str"', safe=True)
    add("null body", "POST", "/api/sessions", b"null")
    add("number body", "POST", "/api/sessions", b"5", safe=True)
    add("BOM body", "POST", "/api/sessions", raw('\ufeff{"id": "{p}bom"}'))
    add("invalid UTF-8 body", "POST", "/api/sessions", raw('{"id": "{p}') + b'\xff"}')
    add("T30 text/plain", "POST", "/api/sessions", js({"id": i("tp")}), headers={"Content-Type": "text/plain"})
    add("latin-1 charset", "POST", "/api/sessions", raw('{"id": "{p}caf') + b'\xe9"}',
        headers={"Content-Type": "application/json; charset=latin-1"})
    add("unknown charset", "POST", "/api/sessions", js({"id": i("cs")}),
        headers={"Content-Type": "application/json; charset=bogus-enc"})
    add("deep nesting", "POST", "/api/sessions", b"[" * 100_000 + b"]" * 100_000, safe=True)
    add("T105 413 no auth", "POST", sid(i("A")) + "/chat", b"x" * (LIMIT + 16), auth=None, headers_only=True, safe=True)
    add("T106 413 create", "POST", "/api/sessions", b"x" * (LIMIT + 1), headers_only=True, safe=True)
    add("T106 413 patch", "PATCH", sid(i("A")), b"x" * (LIMIT + 1), headers_only=True, safe=True)
    add("413 on PUT", "PUT", sid(i("A")), b"x" * (LIMIT + 1), headers_only=True, safe=True)
    add("413 on an unknown path", "POST", "/nope", b"x" * (LIMIT + 1), headers_only=True, safe=True)
    add("413 before 404", "PATCH", sid(i("NOPE")), b"x" * (LIMIT + 1), headers_only=True, safe=True)
    add("GET is not limited", "GET", sid(i("A")), b"x" * (LIMIT + 1), headers_only=True, safe=True)
    add("DELETE is not limited", "DELETE", sid(i("NOPE")), b"x" * (LIMIT + 1), headers_only=True, safe=True)
    titled = js({"title": i("Case")})
    add("exactly the limit on PATCH", "PATCH", sid(i("A")), titled + b" " * (LIMIT - len(titled)))
    add("T107/D4 chunked oversize", "POST", "/api/sessions", _eleven_megabytes, deviation="D4",
        declared=(413, envelope("body_too_large", "Request body too large.")), safe=True)
    big = js({"id": i("big")})
    add("T108 exactly the limit", "POST", "/api/sessions", big + b" " * (LIMIT - len(big)))
    add("chunked under the limit", "POST", "/api/sessions", _Chunks((b'{"id": ', f'"{p}chunky"}}'.encode())))

    c.section("request heads: 0.19.0's limits on the target, a header value and the header count")
    chain = "X-AIP-Delegation-Chain"
    add("target of 8,190 bytes", "GET", "/health?" + "a" * (HEAD_FIELD - 8), auth=None)
    add("D11 target of 8,191 bytes", "GET", "/health?" + "a" * (HEAD_FIELD - 7), auth=None, deviation="D11",
        declared=(400, envelope("request_target_too_long", "Request target (path and query) longer than 8190 bytes.")))
    add("header value of 8,190 bytes", "GET", "/api/sessions?limit=1", headers={chain: "c" * HEAD_FIELD},
        listing=True)
    add("D11 header value of 8,191 bytes", "GET", "/api/sessions?limit=1", headers={chain: "c" * (HEAD_FIELD + 1)},
        deviation="D11", listing=True,
        declared=(400, envelope("request_header_too_large", f"Request header '{chain}' too large: "
                                "its value passes 8190 bytes.")))
    add("128 header lines", "GET", "/health", auth=None, headers={f"X-H{k}": "v" for k in range(127)})
    add("D11 129 header lines", "GET", "/health", auth=None, headers={f"X-H{k}": "v" for k in range(128)},
        deviation="D11", declared=(400, envelope("too_many_headers", "More than 128 request headers.")))

    c.section("listing sessions: limit, offset, include_children, source")
    for q in ["limit=0", "limit=-1", "limit=abc", "limit=1.5", "limit=500", "limit=1_0", "limit=%201%20",
              "limit=+2", "limit=%D9%A3", "limit=", "limit=1&limit=5", "offset=2000000&limit=1",
              "limit=2&offset=1", "offset=-5&limit=1", "offset=x&limit=1", "limit=3&offset=%EF%BC%92"]:
        add(f"list ?{q}", "GET", f"/api/sessions?{q}", listing=True)
    for v in ["yes", "1", "true", "on", "%20TRUE%20", "2", "y", "", "off"]:
        add(f"list include_children={v}", "GET", f"/api/sessions?limit=200&include_children={v}", listing=True)
    for q in ["source=cli", "source=api_server&limit=5", "source=", "source=CLI", "source=telegram",
              "source=cron&include_children=1"]:
        add(f"list ?{q}", "GET", f"/api/sessions?{q}", listing=True)
    for q in ["limit=%zz", "limit=&limit=5", "source=%FF", "source=api+server", "limit=3&offset=3",
              "limit=4&offset=200", "include_children=1&limit=5&offset=2",
              "limit=200&source=api_server&include_children=true",
              "LIMIT=1", "limit=0x10", "limit=1e2", "limit=%E2%82%81", "limit=1;offset=2", "limit=2&&offset=1",
              "=5&limit=2", "limit&offset=1", "limit=%2B3", "limit=3%00", "limit=%203%0A", "offset=1%5F0&limit=2",
              "include_children=%E2%80%83yes", "source=api_server%00"]:
        add(f"list ?{q}", "GET", f"/api/sessions?{q}", listing=True)
    add("list with a body", "GET", "/api/sessions?limit=2", b"{junk", listing=True)
    add("list everything", "GET", "/api/sessions?limit=200", listing=True)

    c.section("reading a session; unknown paths and methods (404, 405); path decoding")
    add("T43 %20", "GET", sid(i("%20")))
    add("redacted 404", "GET", sid(i("sk-ant-api03-abcdefghijklmnopqrstuvwxyz")))
    add("percent-decoded id", "GET", sid(i("sp%20ace%25")))
    add("non-ASCII path id", "GET", sid(i("caf%C3%A9-%E6%BC%A2")))
    add("T45 compressed root raw", "GET", sid("sd-cmp-root"), needs=[SEEDED])
    add("T39 archived GET", "GET", sid("sd-arc-plain"), needs=[SEEDED])
    add("telegram row user_id", "GET", sid("sd-src-tg"), needs=[SEEDED])
    add("case-sensitive id", "GET", sid(i("a")))
    add("T113 trailing slash", "GET", "/api/sessions/")
    add("T113 upper-case path", "GET", "/API/sessions")
    add("T44b a/b", "GET", sid(i("a") + "/b"))
    add("deep unknown path", "GET", sid(i("x") + "/y/z"))
    add("T112 PUT", "PUT", sid(i("A")), js({}))
    add("T114 HEAD", "HEAD", "/api/sessions")
    add("POST on a session", "POST", sid(i("A")), js({}))
    # On a server that would delete every session for it, this is no probe to send.
    add("DELETE on the collection", "DELETE", "/api/sessions", needs=[BARE])
    add("GET on fork", "GET", sid(i("A")) + "/fork")
    add("405 before auth", "PUT", sid(i("A")), auth=None)
    add("invalid UTF-8 path id", "GET", sid(i("%FF%FE")))
    add("create a+b", "POST", "/api/sessions", js({"id": i("a+b")}), needs=[WRITES])
    for path_id in ["a%2Bb", "a+b", "x%2fy", "%C3%A9%FF", "%c3%a9", "%C3", "%E2%80", "%ED%A0%80", "%C0%AF",
                    "%25%32%46", "%zz", "%", "%00", "%2E", "x%2F..%2Fy", "%2Fx/messages", "%7Bx%7D",
                    "%7B%27a%27%3A%201%7D", "{x}", "A#frag", "./x", "x/../x", "x/", "x//messages"]:
        path = {"./x": "./" + i("x"), "x/../x": i("x") + "/../" + i("x")}.get(path_id, i(path_id))
        add(f"path id {path_id}", "GET", sid(path))
    add("dot segment in static part", "GET", "/api/./sessions", listing=True)
    add("leading double slash", "GET", "//api/sessions", listing=True)
    add("dot-dot path id", "GET", sid("%2e%2e"))  # `..` can never be a session's id
    add("double slash", "GET", "/api//sessions", listing=True)
    add("encoded static segment", "GET", "/api/%73essions", listing=True)
    add("semicolon id", "GET", sid(i("a;b")))
    add("query on get", "GET", sid(i("A")) + "?x=1")
    add("POST on messages", "POST", sid(i("A")) + "/messages", js({}))
    add("OPTIONS on a session", "OPTIONS", sid(i("A")))
    add("fork 404 before body", "POST", sid(i("NOPE")) + "/fork", b"nope")
    add("two Authorization headers", "GET", "/api/sessions?limit=1",
        headers={"Authorization": "Bearer wrong-wrong-wrong-wrong"}, listing=True)
    add("404 before auth", "GET", "/nope", auth=None)

    c.section("renaming and closing a session (PATCH)", WRITES)
    add("T46 unknown fields", "PATCH", sid(i("A")), js({"model": "x", "foo": 1, "title": i("n")}))
    add("T46 title unchanged", "GET", sid(i("A")))
    add("T47 404 before body", "PATCH", sid(i("NOPE")), b"{", safe=True)
    add("T48 empty patch", "PATCH", sid(i("A")), js({}))
    add("T48b empty body", "PATCH", sid(i("A")), b"")
    add("patch array body", "PATCH", sid(i("A")), b"[1]")
    add("patch null-valued unknown", "PATCH", sid(i("A")), js({"x": None}))
    add("create Z Other", "POST", "/api/sessions", js({"id": i("Z"), "title": i("Other")}))
    add("T49 duplicate title", "PATCH", sid(i("A")), js({"title": i("Other")}))
    add("T51 dup title + end", "PATCH", sid(i("A")), js({"title": i("Other"), "end_reason": "x"}))
    add("T51 not closed", "GET", sid(i("A")))
    add("T50 title 101", "PATCH", sid(i("A")), js({"title": n.fill("x", 101)}))
    add("T52c own title", "PATCH", sid(i("A")), js({"title": i("Case")}))
    add("T52 title null", "PATCH", sid(i("A")), js({"title": None}))
    add("T52b title 0", "PATCH", sid(i("A")), js({"title": 0}))
    add("patch surrogate title", "PATCH", sid(i("A")), raw('{"title": "{p}p\\udfffq"}'))
    add("patch title whitespace", "PATCH", sid(i("A")), js({"title": " \t "}))
    falsy: list[Any] = ["", False, 0, [], None, {}]
    for v in falsy:
        add(f"T53 falsy end_reason {v!r}", "PATCH", sid(i("A")), js({"end_reason": v}))
    add("create CL", "POST", "/api/sessions", js({"id": i("CL")}))
    add("T54 close", "PATCH", sid(i("CL")), js({"end_reason": "client_closed"}))
    add("T54 second close", "PATCH", sid(i("CL")), js({"end_reason": "other"}))
    add("create E5", "POST", "/api/sessions", js({"id": i("E5")}))
    add("T55 end_reason 5", "PATCH", sid(i("E5")), js({"end_reason": 5}))
    add("create ES", "POST", "/api/sessions", js({"id": i("ES")}))
    add("end_reason spaces", "PATCH", sid(i("ES")), js({"end_reason": "  ", "title": i("spaced")}))
    add("create EX", "POST", "/api/sessions", js({"id": i("EX")}))
    add("D6 surrogate end_reason", "PATCH", sid(i("EX")), b'{"end_reason": "\\ud800"}',
        deviation="D6", declared=(400, envelope(None, "Invalid value for 'end_reason': text must be valid Unicode",
                                                "end_reason")))
    add("T56 compression takeover", "PATCH", sid("sd-cmp-tip"), js({"title": "sd Compressed convo"}), needs=[SEEDED])
    add("T56 root lost title", "GET", sid("sd-cmp-root"), needs=[SEEDED])
    add("takeover not from sibling", "PATCH", sid("sd-cmp-mid"), js({"title": "sd Delegating parent"}), needs=[SEEDED])
    add("unknown beats too-long title", "PATCH", sid(i("ES")), js({"title": n.fill("x", 101), "foo": 1}))
    add("duplicate keys, last wins", "PATCH", sid(i("ES")), raw('{"title": "{p}first", "title": "{p}last-wins"}'))
    add("create ED", "POST", "/api/sessions", js({"id": i("ED")}))
    add("dict end_reason", "PATCH", sid(i("ED")), js({"end_reason": {"a": 1}}))
    add("create ET", "POST", "/api/sessions", js({"id": i("ET")}))
    add("true end_reason + title on closed", "PATCH", sid(i("ET")), js({"end_reason": True, "title": i("et")}))
    add("title change on closed", "PATCH", sid(i("ET")), js({"end_reason": "later", "title": i("et2")}))
    add("patch archived row", "PATCH", sid("sd-arc-plain"), js({"title": "unarchived?"}), needs=[SEEDED])
    add("patch text/plain", "PATCH", sid(i("ET")), js({"title": i("tp2")}), headers={"Content-Type": "text/plain"})
    add("branched end_reason unvalidated", "PATCH", sid(i("ES")), js({"end_reason": "compression"}))

    c.section("reading a transcript (/messages), forks and compression chains")
    for seeded in ["sd-cmp-root", "sd-cmp-mid", "sd-cmp-tip", "sd-cmpct", "sd-rewind", "sd-arc-plain",
                   "sd-arc-root", "xp-mm", "xp-61", "xr-raw", "xc-root", "xc2-root", "xc3-root"]:
        add(f"messages {seeded}", "GET", f"{sid(seeded)}/messages", needs=[SEEDED])
    add("messages A", "GET", f"{sid(i('A'))}/messages")
    add("T64 messages 404", "GET", f"{sid(i('NOPE'))}/messages")
    add("D2 delegate parent messages", "GET", "/api/sessions/sd-dlg-parent/messages", deviation="D2", needs=[SEEDED])
    add("D2 untagged child parent", "GET", "/api/sessions/xu-p/messages", deviation="D2", needs=[SEEDED])
    add("fork xf-src", "POST", "/api/sessions/xf-src/fork", js({"id": "xf-child"}), needs=[SEEDED])
    add("T62/D2 fork source messages", "GET", "/api/sessions/xf-src/messages", deviation="D2", needs=[SEEDED])
    add("fork child messages", "GET", "/api/sessions/xf-child/messages", needs=[SEEDED])
    add("fork into a/b", "POST", f"{sid(i('A'))}/fork", js({"id": i("a/b")}), needs=[WRITES])
    add("T44 GET a%2Fb", "GET", sid(i("a%2Fb")))
    add("T38 fork xo-src once", "POST", "/api/sessions/xo-src/fork", js({"id": "xo-c1"}), needs=[SEEDED])
    add("T38 fork xo-src twice", "POST", "/api/sessions/xo-src/fork", js({"id": "xo-c2"}), needs=[SEEDED])
    add("create CX", "POST", "/api/sessions", js({"id": i("CX"), "title": i("cx title")}), needs=[WRITES])
    add("close CX as compression", "PATCH", sid(i("CX")), js({"end_reason": "compression"}), needs=[WRITES])
    add("fork of a compressed source", "POST", f"{sid(i('CX'))}/fork", js({"id": i("CX-cont")}), needs=[WRITES])
    add("compressed source's messages", "GET", f"{sid(i('CX'))}/messages")
    add("title takeover by the continuation", "PATCH", sid(i("CX-cont")), js({"title": i("cx title")}),
        needs=[WRITES])
    add("list after forks", "GET", "/api/sessions?limit=200", listing=True)
    add("list after forks, children", "GET", "/api/sessions?limit=200&include_children=on", listing=True)

    c.section("deleting a session and what goes with it")
    add("T57 delete delegate parent", "DELETE", "/api/sessions/sd-dlg-parent", needs=[SEEDED])
    for seeded in ["sd-dlg-child", "sd-dlg-grandchild", "sd-dlg-marker-only", "sd-dlg-plain-child",
                   "sd-dlg-branch-child"]:
        add(f"T57 after delete {seeded}", "GET", sid(seeded), needs=[SEEDED])
    add("T58 delete again", "DELETE", "/api/sessions/sd-dlg-parent", needs=[SEEDED])
    add("T59 delete compression root", "DELETE", "/api/sessions/sd-cmp-root", needs=[SEEDED])
    add("T59 mid unlinked", "GET", "/api/sessions/sd-cmp-mid", needs=[SEEDED])
    add("T60 delete NOPE", "DELETE", sid(i("NOPE")))
    add("delete fork source", "DELETE", "/api/sessions/xf-src", needs=[SEEDED])
    add("delete a%2Fb", "DELETE", sid(i("a%2Fb")), needs=[WRITES])
    add("delete with a body", "DELETE", sid(i("Z")), b"{not json", needs=[WRITES])
    add("delete a compression tip", "DELETE", "/api/sessions/xc2-a2", needs=[SEEDED])
    add("delete a foreign delegate's parent", "DELETE", "/api/sessions/xd-p", needs=[SEEDED])
    add("foreign-marker child gone", "GET", "/api/sessions/xd-c", needs=[SEEDED])
    add("delete archived", "DELETE", "/api/sessions/sd-arc-plain", needs=[SEEDED])
    add("list after deletes", "GET", "/api/sessions?limit=200", listing=True)
    add("list after deletes, children", "GET", "/api/sessions?limit=200&include_children=1", listing=True)

    c.section("a server started without a key")
    add("T4 no key, no header", "GET", "/api/sessions", auth=None, pair="nokey")
    add("no key, any bearer", "GET", "/api/sessions", auth="Bearer whatever", pair="nokey")
    add("no key, create", "POST", "/api/sessions", js({"id": "nk"}), auth=None, pair="nokey")
    add("no key, session key off chat", "GET", "/api/sessions/nk", auth=None, pair="nokey",
        headers={"X-Hermes-Session-Key": "abc"})
    add("T5 no key, session key on chat", "POST", "/api/sessions/NOPE/chat", js({"message": "x"}),
        auth=None, pair="nokey", headers={"X-Hermes-Session-Key": "abc"})

    c.section("a state.db that cannot be opened: 503 session_db_unavailable")
    broken = "broken"
    add("T109 list 503", "GET", "/api/sessions", pair=broken)
    add("T109 get 503", "GET", "/api/sessions/x", pair=broken)
    add("T109 create 503", "POST", "/api/sessions", js({"id": "x"}), pair=broken)
    add("T109b create bad JSON 400", "POST", "/api/sessions", b"{", pair=broken)
    add("T109 patch bad JSON 503", "PATCH", "/api/sessions/x", b"{", pair=broken)
    add("T109 delete 503", "DELETE", "/api/sessions/x", pair=broken)
    add("T109 messages 503", "GET", "/api/sessions/x/messages", pair=broken)
    add("T109 fork 503", "POST", "/api/sessions/x/fork", b"{", pair=broken)
    add("T109 auth before 503", "GET", "/api/sessions", auth=None, pair=broken)
    add("T109 health still ok", "GET", "/health", auth=None, pair=broken)
    add("T109 chat 503", "POST", "/api/sessions/x/chat", js({"message": "hi"}), pair=broken)
    add("T109c chat long session key", "POST", "/api/sessions/x/chat", js({"message": "hi"}),
        headers={"X-Hermes-Session-Key": "k" * 300}, pair=broken)
    return c.steps


def _eleven_megabytes() -> Iterator[bytes]:
    """D4's body: 11 chunks of a million spaces, sent chunked (no Content-Length)."""
    return (b" " * 1_000_000 for _ in range(11))


class _Chunks:
    """A chunked body of fixed chunks (a callable, as `wire.exchange` takes one)."""

    def __init__(self, chunks: tuple[bytes, ...]) -> None:
        self.chunks = chunks

    def __call__(self) -> Iterator[bytes]:
        return iter(self.chunks)
