#!/usr/bin/env python3
"""Differential check: send the same requests to upstream hermes-agent 0.19.0 and to hermes-server.

Over 400 lines on purpose: most of it is the request table (364 cases), kept in one file so
the whole conformance set reads top to bottom.

Usage (from the repository root):

    .venv/bin/python tools/oracle_diff.py [--verbose] [--keep] [--upstream-quirks]

With `--upstream-quirks` hermes-server runs with that flag and every case, the declared
deviations included, must be identical. HERMES_DIFF_PORT_BASE moves the ports.

It starts, on fresh temporary homes:
- the oracle (`../shared/oracle/start_upstream.sh`) twice: with a key (port 18800,
  mock 18801) and without one (18802/18803);
- hermes-server twice, with the same key (18810) and with `--no-auth` (18811).

Both state.db files get the same rows that the HTTP API cannot create, written by
upstream's own SessionDB: the oracle's `seed_state.py` scenarios plus a few extra
sessions (preview edge cases, a multimodal transcript, a fork source with messages,
an untagged child), see `seed_extra()` (run under the oracle's Python).

Then every request in `build_cases()` goes to the oracle, then to hermes-server, in
the same order. Responses are compared on status, Content-Type, the `Allow` header,
whether the security headers are present, and the exact body bytes after
normalisation: timestamps (`started_at`, `ended_at`, `last_active`, `timestamp`,
`created`) become `<ts>`, generated ids (`api_<secs>_<8 hex>`) become `<gen-N>` in
order of first appearance on each side.

A case may declare an expected deviation (D1–D11 in docs/differences.md) and
hermes-server's own answer for it; such differences are counted separately and the
declared answer is checked too. The exit status is 0 only when there is no
unexpected difference.
"""

from __future__ import annotations

import argparse
import dataclasses
import difflib
import json
import os
import re
import sqlite3
import subprocess
import sys
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import quote

from oracle_common import (
    KEY,
    ORACLE_DIR,
    ORACLE_PY,
    SECURITY_HEADER,
    Workbench,
    command_line,
    decoded_body,
    exchange,
    js,
    rebased,
)

# Three pairs of servers: with the key, without any key, and over a state.db that cannot be opened.
PORTS = rebased({("oracle", "key"): 18800, ("oracle", "nokey"): 18802, ("oracle", "broken"): 18804,
                 ("ours", "key"): 18810, ("ours", "nokey"): 18811, ("ours", "broken"): 18812})
LIMIT = 10_000_000
HEAD_FIELD = 8190  # 0.19.0's most bytes of a request target and of a header value
TIMESTAMP_KEYS = ("started_at", "ended_at", "last_active", "timestamp", "created")
_TS_RE = re.compile(r'"(' + "|".join(TIMESTAMP_KEYS) + r')": -?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?')
_GEN_RE = re.compile(r"api_\d{6,12}_[0-9a-f]{8}")


def envelope(code: str | None, message: str, param: Any = None) -> dict[str, Any]:
    return {"error": {"message": message, "type": "invalid_request_error", "param": param, "code": code}}


# -- requests -------------------------------------------------------------------


@dataclass
class Case:
    """One request, sent identically to both servers."""

    name: str
    method: str
    path: str
    body: bytes | Callable[[], Iterator[bytes]] | None = None
    headers: dict[str, str | bytes] = field(default_factory=dict)
    auth: str | bytes | None = "key"  # "key": the right bearer; None: no header; else the raw header value
    pair: str = "key"  # which pair of servers: "key", "nokey" (no key configured), "broken" (state.db unopenable)
    headers_only: bool = False  # send the headers (with Content-Length) but never the body
    deviation: str | None = None  # D1..D6 when hermes-server is meant to differ
    ours: tuple[int, Any] | None = None  # hermes-server's declared answer for a deviation
    # Sent to the oracle only, after this case, to undo state that a deviation created there
    # (so later list answers stay comparable).
    oracle_cleanup: list[Case] = field(default_factory=list)


def build_cases() -> list[Case]:
    """The request sequence; ids are unique so order only matters where a case says so."""
    c: list[Case] = []
    add = c.append
    bad_bearer = b"Bearer \xff\xfe-not-utf8"

    # -- health, auth, CORS ------------------------------------------------------
    add(Case("health", "GET", "/health", auth=None))
    add(Case("v1 health", "GET", "/v1/health", auth=None))
    add(Case("T1 no auth", "GET", "/api/sessions", auth=None))
    add(Case("T2 lower-case bearer", "GET", "/api/sessions", auth=f"bearer {KEY}"))
    add(Case("T3 padded bearer", "GET", "/api/sessions", auth=f"Bearer    {KEY}   "))
    add(Case("bearer with tab", "GET", "/api/sessions", auth=f"Bearer\t{KEY}"))
    add(Case("wrong key", "GET", "/api/sessions", auth="Bearer wrong-key-0123456789abcdef"))
    add(Case("basic auth", "GET", "/api/sessions", auth="Basic abc"))
    add(Case("D5 non-UTF-8 bearer", "GET", "/api/sessions", auth=bad_bearer, deviation="D5",
             ours=(401, {"error": {"message": "Invalid API key", "type": "invalid_request_error",
                                   "code": "invalid_api_key"}})))
    add(Case("T9 foreign Origin", "GET", "/api/sessions", headers={"Origin": "https://evil"}))
    add(Case("OPTIONS with Origin", "OPTIONS", "/api/sessions", headers={"Origin": "https://evil"}))
    add(Case("OPTIONS without Origin", "OPTIONS", "/api/sessions"))
    add(Case("T7 long session key off chat", "GET", "/api/sessions/nope-t7",
             headers={"X-Hermes-Session-Key": "k" * 300}))
    add(Case("health with bad auth", "GET", "/health", auth="Bearer nope"))
    add(Case("UTF-8 non-ASCII bearer", "GET", "/api/sessions", auth="Bearer caf\u00e9".encode()))
    add(Case("bearer without a token", "GET", "/api/sessions", auth="Bearer "))
    add(Case("HEAD /health", "HEAD", "/health", auth=None))
    add(Case("HEAD on a session", "HEAD", "/api/sessions/x"))

    # -- create: ids ---------------------------------------------------------------
    add(Case("T10 create {}", "POST", "/api/sessions", js({})))
    for i, bad in enumerate(["   ", "a..b", "a/b", "a\\b", "C:x", "\u00e9:x", "a:b", "C:", "..",
                             "t\nb", "t\rb", "t\x00b"]):
        add(Case(f"T11/T12/T16b invalid id #{i} {bad!r}", "POST", "/api/sessions", js({"id": bad})))
    add(Case("T13 ab:x", "POST", "/api/sessions", js({"id": "ab:x"})))
    for i, ok in enumerate([":x", "1:x", "_:x", "a.b", ".", "\u2028ls\u2028in", "\u00a0nb\u00a0", " \u3000w\u3000 ",
                            "\U0001f600" * 256, "%2F", "a%2Fb-literal"]):
        add(Case(f"accepted id #{i} {ok[:12]!r}", "POST", "/api/sessions", js({"id": ok})))
    for i, bad in enumerate(["\u01c5:x", "...", "x/", " \t ", "\u00a0", "..\\x"]):
        add(Case(f"refused id #{i} {bad!r}", "POST", "/api/sessions", js({"id": bad})))
    add(Case("256 after trimming", "POST", "/api/sessions", js({"id": "  " + "w" * 256 + "  "})))
    add(Case("257 astral", "POST", "/api/sessions", js({"id": "\U0001f600" * 257})))
    add(Case("T14 257 chars", "POST", "/api/sessions", js({"id": "x" * 257})))
    add(Case("T14b 256 chars", "POST", "/api/sessions", js({"id": "y" * 256})))
    add(Case("T15 .. + 257", "POST", "/api/sessions", js({"id": ".." + "x" * 257})))
    d3 = (400, envelope("invalid_session_id", "Invalid session ID"))
    for i, ctl in enumerate(["t\tb", "\x01x", "x\x7f", "x\x85y", "x\x1fy"]):
        add(Case(f"T16/D3 control id #{i} {ctl!r}", "POST", "/api/sessions", js({"id": ctl}),
                 deviation="D3", ours=d3,
                 oracle_cleanup=[Case("undo", "DELETE", "/api/sessions/" + quote(ctl, safe=""))]))
    add(Case("format char id accepted", "POST", "/api/sessions", js({"id": "zw\u200bsp"})))
    add(Case("non-ASCII id", "POST", "/api/sessions", js({"id": "caf\u00e9-\u6f22"})))
    add(Case("T17 padded id", "POST", "/api/sessions", js({"id": "  pad  "})))
    add(Case("T18 int id", "POST", "/api/sessions", js({"id": 123})))
    add(Case("true id", "POST", "/api/sessions", js({"id": True})))
    add(Case("float id", "POST", "/api/sessions", js({"id": 1.5})))
    add(Case("T19 empty id, session_id", "POST", "/api/sessions", js({"id": "", "session_id": "S2"})))
    add(Case("T19b id wins", "POST", "/api/sessions", js({"id": "ID1", "session_id": "ID2"})))
    add(Case("zero id, session_id", "POST", "/api/sessions", js({"id": 0, "session_id": "zero-sid"})))
    add(Case("list id falls back", "POST", "/api/sessions", js({"id": []})))
    add(Case("list id [1]", "POST", "/api/sessions", js({"id": [1]})))
    add(Case("dict id", "POST", "/api/sessions", js({"id": {"a": 1}})))
    add(Case("T78-like session_id only", "POST", "/api/sessions", js({"session_id": "viaSid"})))
    add(Case("D6 lone surrogate id", "POST", "/api/sessions", b'{"id": "x\\ud800y"}', deviation="D6",
             ours=(400, envelope("invalid_session_id", "Invalid session ID"))))
    add(Case("T20 duplicate id", "POST", "/api/sessions", js({"id": "pad"})))
    add(Case("sp ace% id", "POST", "/api/sessions", js({"id": "sp ace%"})))

    # -- create: titles, model, system_prompt ----------------------------------------
    add(Case("create A Case", "POST", "/api/sessions", js({"id": "A", "title": "Case"})))
    add(Case("T21 duplicate title", "POST", "/api/sessions", js({"id": "B", "title": "Case"})))
    add(Case("T21 B absent", "GET", "/api/sessions/B"))
    add(Case("case-sensitive title", "POST", "/api/sessions", js({"id": "B2", "title": "CASE"})))
    add(Case("dup after sanitising", "POST", "/api/sessions", js({"id": "B3", "title": "  Case\u200b "})))
    add(Case("T22/D1 title 101", "POST", "/api/sessions", js({"id": "T101", "title": "t" * 101}),
             deviation="D1", ours=(400, envelope("invalid_title", "Title too long (101 chars, max 100)"))))
    add(Case("T22 no row", "GET", "/api/sessions/T101"))
    add(Case("T23 title 100", "POST", "/api/sessions", js({"id": "T100", "title": "u" * 100})))
    add(Case("T24 control title", "POST", "/api/sessions", js({"id": "TC", "title": "  a\x01b\t\tc\u200bd\n e  "})))
    add(Case("T25 blank title", "POST", "/api/sessions", js({"id": "TE", "title": "   "})))
    add(Case("T25b false title", "POST", "/api/sessions", js({"id": "TF", "title": False})))
    add(Case("T25c NaN title", "POST", "/api/sessions", b'{"id": "TN", "title": NaN}'))
    add(Case("Infinity title", "POST", "/api/sessions", b'{"id": "TI", "title": -Infinity}'))
    add(Case("0 title", "POST", "/api/sessions", js({"id": "T0", "title": 0})))
    add(Case("[1] title", "POST", "/api/sessions", js({"id": "TL", "title": [1]})))
    add(Case("dict title", "POST", "/api/sessions", js({"id": "TD", "title": {"a": 1}})))
    add(Case("zero-width title", "POST", "/api/sessions", js({"id": "TZ", "title": "\u200b"})))
    add(Case("100 x e-acute", "POST", "/api/sessions", js({"id": "TE100", "title": "\u00e9" * 100})))
    add(Case("99 + 2 zero-width", "POST", "/api/sessions", js({"id": "T99", "title": "a" * 99 + "\u200b\u200b"})))
    add(Case("unicode whitespace title", "POST", "/api/sessions", js({"id": "TW", "title": "x\u00a0\u00a0y\u3000z\x85w"})))
    add(Case("surrogate title repaired", "POST", "/api/sessions", b'{"id": "TS", "title": "q\\ud800r"}'))
    add(Case("D1 long dict title", "POST", "/api/sessions", js({"id": "TLD", "title": {"k": "v" * 100}}),
             deviation="D1", ours=(400, envelope("invalid_title", "Title too long (109 chars, max 100)"))))
    add(Case("true title", "POST", "/api/sessions", js({"id": "TT", "title": True})))
    add(Case("NBSP-only title", "POST", "/api/sessions", js({"id": "TNB", "title": "\u00a0\u2003"})))
    add(Case("title held by a compression tip", "POST", "/api/sessions", js({"id": "TH", "title": "sd Compressed convo #3"})))
    add(Case("title 100 after collapsing", "POST", "/api/sessions", js({"id": "TCL", "title": "v" * 50 + " \t\n " + "v" * 49})))
    add(Case("T26 system_prompt int", "POST", "/api/sessions", js({"id": "SPI", "system_prompt": 5})))
    add(Case("system_prompt list", "POST", "/api/sessions", js({"id": "SPL", "system_prompt": ["a"]})))
    add(Case("system_prompt empty", "POST", "/api/sessions", js({"id": "SPE", "system_prompt": ""})))
    add(Case("T29 system_prompt", "POST", "/api/sessions", js({"id": "SPS", "system_prompt": "sp"})))
    add(Case("system_prompt null", "POST", "/api/sessions", js({"id": "SPN", "system_prompt": None})))
    add(Case("D6 surrogate system_prompt", "POST", "/api/sessions", b'{"id": "SPX", "system_prompt": "\\udc00"}',
             deviation="D6", ours=(400, envelope(None, "Invalid value for 'system_prompt': text must be valid Unicode",
                                                 "system_prompt"))))
    add(Case("D6 surrogate model", "POST", "/api/sessions", b'{"id": "MX", "model": "\\ud83d"}',
             deviation="D6", ours=(400, envelope(None, "Invalid value for 'model': text must be valid Unicode",
                                                 "model"))))
    add(Case("T28 int model", "POST", "/api/sessions", js({"id": "M", "model": 42})))
    add(Case("false model", "POST", "/api/sessions", js({"id": "MF", "model": False})))
    add(Case("named model", "POST", "/api/sessions", js({"id": "MS", "model": "custom-model", "extra": 1})))

    # -- bodies --------------------------------------------------------------------
    add(Case("T27 bad JSON", "POST", "/api/sessions", b"{bad"))
    add(Case("T27b empty body", "POST", "/api/sessions", b""))
    add(Case("T27c array body", "POST", "/api/sessions", b"[1,2]"))
    add(Case("string body", "POST", "/api/sessions", b'"str"'))
    add(Case("null body", "POST", "/api/sessions", b"null"))
    add(Case("number body", "POST", "/api/sessions", b"5"))
    add(Case("BOM body", "POST", "/api/sessions", b'\xef\xbb\xbf{"id": "bom"}'))
    add(Case("invalid UTF-8 body", "POST", "/api/sessions", b'{"id": "\xff"}'))
    add(Case("T30 text/plain", "POST", "/api/sessions", js({"id": "tp"}), headers={"Content-Type": "text/plain"}))
    add(Case("latin-1 charset", "POST", "/api/sessions", b'{"id": "caf\xe9"}',
             headers={"Content-Type": "application/json; charset=latin-1"}))
    add(Case("unknown charset", "POST", "/api/sessions", js({"id": "cs"}),
             headers={"Content-Type": "application/json; charset=bogus-enc"}))
    add(Case("deep nesting", "POST", "/api/sessions", b"[" * 100_000 + b"]" * 100_000))
    add(Case("T105 413 no auth", "POST", "/api/sessions/A/chat", b"x" * (LIMIT + 16), auth=None, headers_only=True))
    add(Case("T106 413 create", "POST", "/api/sessions", b"x" * (LIMIT + 1), headers_only=True))
    add(Case("T106 413 patch", "PATCH", "/api/sessions/A", b"x" * (LIMIT + 1), headers_only=True))
    add(Case("413 on PUT", "PUT", "/api/sessions/A", b"x" * (LIMIT + 1), headers_only=True))
    add(Case("413 on an unknown path", "POST", "/nope", b"x" * (LIMIT + 1), headers_only=True))
    add(Case("413 before 404", "PATCH", "/api/sessions/NOPE", b"x" * (LIMIT + 1), headers_only=True))
    add(Case("GET is not limited", "GET", "/api/sessions/A", b"x" * (LIMIT + 1), headers_only=True))
    add(Case("DELETE is not limited", "DELETE", "/api/sessions/NOPE", b"x" * (LIMIT + 1), headers_only=True))
    add(Case("exactly the limit on PATCH", "PATCH", "/api/sessions/A",
             js({"title": "Case"}) + b" " * (LIMIT - len(js({"title": "Case"})))))
    add(Case("T107/D4 chunked oversize", "POST", "/api/sessions",
             lambda: (b" " * 1_000_000 for _ in range(11)), deviation="D4",
             ours=(413, envelope("body_too_large", "Request body too large."))))
    add(Case("T108 exactly the limit", "POST", "/api/sessions",
             js({"id": "big"}) + b" " * (LIMIT - len(js({"id": "big"})))))
    add(Case("chunked under the limit", "POST", "/api/sessions", lambda: iter([b'{"id": ', b'"chunky"}'])))

    # -- request heads: 0.19.0's limits (D11 past them) ---------------------------------
    chain = "X-AIP-Delegation-Chain"
    add(Case("target of 8,190 bytes", "GET", "/health?" + "a" * (HEAD_FIELD - 8), auth=None))
    add(Case("D11 target of 8,191 bytes", "GET", "/health?" + "a" * (HEAD_FIELD - 7), auth=None, deviation="D11",
             ours=(400, envelope("request_target_too_long", "Request target (path and query) longer than 8190 bytes."))))
    add(Case("header value of 8,190 bytes", "GET", "/api/sessions?limit=1", headers={chain: "c" * HEAD_FIELD}))
    add(Case("D11 header value of 8,191 bytes", "GET", "/api/sessions?limit=1", headers={chain: "c" * (HEAD_FIELD + 1)},
             deviation="D11", ours=(400, envelope("request_header_too_large", f"Request header '{chain}' too large: "
                                                  "its value passes 8190 bytes."))))
    add(Case("128 header lines", "GET", "/health", auth=None, headers={f"X-H{i}": "v" for i in range(127)}))
    add(Case("D11 129 header lines", "GET", "/health", auth=None, headers={f"X-H{i}": "v" for i in range(128)},
             deviation="D11", ours=(400, envelope("too_many_headers", "More than 128 request headers."))))

    # -- list ----------------------------------------------------------------------
    for q in ["limit=0", "limit=-1", "limit=abc", "limit=1.5", "limit=500", "limit=1_0", "limit=%201%20",
              "limit=+2", "limit=%D9%A3", "limit=", "limit=1&limit=5", "offset=2000000&limit=1",
              "limit=2&offset=1", "offset=-5&limit=1", "offset=x&limit=1", "limit=3&offset=%EF%BC%92"]:
        add(Case(f"list ?{q}", "GET", f"/api/sessions?{q}"))
    for v in ["yes", "1", "true", "on", "%20TRUE%20", "2", "y", "", "off"]:
        add(Case(f"list include_children={v}", "GET", f"/api/sessions?limit=200&include_children={v}"))
    for q in ["source=cli", "source=api_server&limit=5", "source=", "source=CLI", "source=telegram",
              "source=cron&include_children=1"]:
        add(Case(f"list ?{q}", "GET", f"/api/sessions?{q}"))
    for q in ["limit=%zz", "limit=&limit=5", "source=%FF", "source=api+server", "limit=3&offset=3",
              "limit=4&offset=200", "include_children=1&limit=5&offset=2", "limit=200&source=api_server&include_children=true",
              "LIMIT=1", "limit=0x10", "limit=1e2", "limit=%E2%82%81", "limit=1;offset=2", "limit=2&&offset=1",
              "=5&limit=2", "limit&offset=1", "limit=%2B3", "limit=3%00", "limit=%203%0A", "offset=1%5F0&limit=2",
              "include_children=%E2%80%83yes", "source=api_server%00"]:
        add(Case(f"list ?{q}", "GET", f"/api/sessions?{q}"))
    add(Case("list with a body", "GET", "/api/sessions?limit=2", b"{junk"))
    add(Case("list everything", "GET", "/api/sessions?limit=200"))

    # -- get, framework 404/405 ------------------------------------------------------
    add(Case("T43 %20", "GET", "/api/sessions/%20"))
    add(Case("redacted 404", "GET", "/api/sessions/sk-ant-api03-abcdefghijklmnopqrstuvwxyz"))
    add(Case("percent-decoded id", "GET", "/api/sessions/sp%20ace%25"))
    add(Case("non-ASCII path id", "GET", "/api/sessions/caf%C3%A9-%E6%BC%A2"))
    add(Case("T45 compressed root raw", "GET", "/api/sessions/sd-cmp-root"))
    add(Case("T39 archived GET", "GET", "/api/sessions/sd-arc-plain"))
    add(Case("telegram row user_id", "GET", "/api/sessions/sd-src-tg"))
    add(Case("case-sensitive id", "GET", "/api/sessions/a"))
    add(Case("T113 trailing slash", "GET", "/api/sessions/"))
    add(Case("T113 upper-case path", "GET", "/API/sessions"))
    add(Case("T44b a/b", "GET", "/api/sessions/a/b"))
    add(Case("deep unknown path", "GET", "/api/sessions/x/y/z"))
    add(Case("T112 PUT", "PUT", "/api/sessions/A", js({})))
    add(Case("T114 HEAD", "HEAD", "/api/sessions"))
    add(Case("POST on a session", "POST", "/api/sessions/A", js({})))
    add(Case("DELETE on the collection", "DELETE", "/api/sessions"))
    add(Case("GET on fork", "GET", "/api/sessions/A/fork"))
    add(Case("405 before auth", "PUT", "/api/sessions/A", auth=None))
    add(Case("invalid UTF-8 path id", "GET", "/api/sessions/%FF%FE"))
    add(Case("create a+b", "POST", "/api/sessions", js({"id": "a+b"})))
    for p in ["a%2Bb", "a+b", "x%2fy", "%C3%A9%FF", "%c3%a9", "%C3", "%E2%80", "%ED%A0%80", "%C0%AF", "%25%32%46",
              "%zz", "%", "%00", "%2E", "x%2F..%2Fy", "%2Fx/messages", "%7Bx%7D", "%7B%27a%27%3A%201%7D", "{x}",
              "A#frag", "./x", "x/../x", "x/", "x//messages"]:
        add(Case(f"path id {p}", "GET", f"/api/sessions/{p}"))
    add(Case("dot segment in static part", "GET", "/api/./sessions"))
    add(Case("leading double slash", "GET", "//api/sessions"))
    add(Case("dot-dot path id", "GET", "/api/sessions/%2e%2e"))
    add(Case("double slash", "GET", "/api//sessions"))
    add(Case("encoded static segment", "GET", "/api/%73essions"))
    add(Case("semicolon id", "GET", "/api/sessions/a;b"))
    add(Case("query on get", "GET", "/api/sessions/A?x=1"))
    add(Case("POST on messages", "POST", "/api/sessions/A/messages", js({})))
    add(Case("OPTIONS on a session", "OPTIONS", "/api/sessions/A"))
    add(Case("fork 404 before body", "POST", "/api/sessions/NOPE/fork", b"nope"))
    add(Case("two Authorization headers", "GET", "/api/sessions?limit=1",
             headers={"Authorization": "Bearer wrong-wrong-wrong-wrong"}))
    add(Case("404 before auth", "GET", "/nope", auth=None))

    # -- patch ---------------------------------------------------------------------
    add(Case("T46 unknown fields", "PATCH", "/api/sessions/A", js({"model": "x", "foo": 1, "title": "n"})))
    add(Case("T46 title unchanged", "GET", "/api/sessions/A"))
    add(Case("T47 404 before body", "PATCH", "/api/sessions/NOPE", b"{"))
    add(Case("T48 empty patch", "PATCH", "/api/sessions/A", js({})))
    add(Case("T48b empty body", "PATCH", "/api/sessions/A", b""))
    add(Case("patch array body", "PATCH", "/api/sessions/A", b"[1]"))
    add(Case("patch null-valued unknown", "PATCH", "/api/sessions/A", js({"x": None})))
    add(Case("create Z Other", "POST", "/api/sessions", js({"id": "Z", "title": "Other"})))
    add(Case("T49 duplicate title", "PATCH", "/api/sessions/A", js({"title": "Other"})))
    add(Case("T51 dup title + end", "PATCH", "/api/sessions/A", js({"title": "Other", "end_reason": "x"})))
    add(Case("T51 not closed", "GET", "/api/sessions/A"))
    add(Case("T50 title 101", "PATCH", "/api/sessions/A", js({"title": "x" * 101})))
    add(Case("T52c own title", "PATCH", "/api/sessions/A", js({"title": "Case"})))
    add(Case("T52 title null", "PATCH", "/api/sessions/A", js({"title": None})))
    add(Case("T52b title 0", "PATCH", "/api/sessions/A", js({"title": 0})))
    add(Case("patch surrogate title", "PATCH", "/api/sessions/A", b'{"title": "p\\udfffq"}'))
    add(Case("patch title whitespace", "PATCH", "/api/sessions/A", js({"title": " \t "})))
    for v in ["", False, 0, [], None, {}]:
        add(Case(f"T53 falsy end_reason {v!r}", "PATCH", "/api/sessions/A", js({"end_reason": v})))
    add(Case("create CL", "POST", "/api/sessions", js({"id": "CL"})))
    add(Case("T54 close", "PATCH", "/api/sessions/CL", js({"end_reason": "client_closed"})))
    add(Case("T54 second close", "PATCH", "/api/sessions/CL", js({"end_reason": "other"})))
    add(Case("create E5", "POST", "/api/sessions", js({"id": "E5"})))
    add(Case("T55 end_reason 5", "PATCH", "/api/sessions/E5", js({"end_reason": 5})))
    add(Case("create ES", "POST", "/api/sessions", js({"id": "ES"})))
    add(Case("end_reason spaces", "PATCH", "/api/sessions/ES", js({"end_reason": "  ", "title": "spaced"})))
    add(Case("create EX", "POST", "/api/sessions", js({"id": "EX"})))
    add(Case("D6 surrogate end_reason", "PATCH", "/api/sessions/EX", b'{"end_reason": "\\ud800"}',
             deviation="D6", ours=(400, envelope(None, "Invalid value for 'end_reason': text must be valid Unicode",
                                                 "end_reason"))))
    add(Case("T56 compression takeover", "PATCH", "/api/sessions/sd-cmp-tip", js({"title": "sd Compressed convo"})))
    add(Case("T56 root lost title", "GET", "/api/sessions/sd-cmp-root"))
    add(Case("takeover not from sibling", "PATCH", "/api/sessions/sd-cmp-mid", js({"title": "sd Delegating parent"})))
    add(Case("unknown beats too-long title", "PATCH", "/api/sessions/ES", js({"title": "x" * 101, "foo": 1})))
    add(Case("duplicate keys, last wins", "PATCH", "/api/sessions/ES", b'{"title": "first", "title": "last-wins"}'))
    add(Case("create ED", "POST", "/api/sessions", js({"id": "ED"})))
    add(Case("dict end_reason", "PATCH", "/api/sessions/ED", js({"end_reason": {"a": 1}})))
    add(Case("create ET", "POST", "/api/sessions", js({"id": "ET"})))
    add(Case("true end_reason + title on closed", "PATCH", "/api/sessions/ET", js({"end_reason": True, "title": "et"})))
    add(Case("title change on closed", "PATCH", "/api/sessions/ET", js({"end_reason": "later", "title": "et2"})))
    add(Case("patch archived row", "PATCH", "/api/sessions/sd-arc-plain", js({"title": "unarchived?"})))
    add(Case("patch text/plain", "PATCH", "/api/sessions/ET", js({"title": "tp2"}), headers={"Content-Type": "text/plain"}))
    add(Case("branched end_reason unvalidated", "PATCH", "/api/sessions/ES", js({"end_reason": "compression"})))

    # -- messages ------------------------------------------------------------------
    for sid in ["sd-cmp-root", "sd-cmp-mid", "sd-cmp-tip", "sd-cmpct", "sd-rewind", "sd-arc-plain",
                "sd-arc-root", "xp-mm", "xp-61", "xr-raw", "xc-root", "xc2-root", "xc3-root", "A"]:
        add(Case(f"messages {sid}", "GET", f"/api/sessions/{sid}/messages"))
    add(Case("T64 messages 404", "GET", "/api/sessions/NOPE/messages"))
    add(Case("D2 delegate parent messages", "GET", "/api/sessions/sd-dlg-parent/messages", deviation="D2"))
    add(Case("D2 untagged child parent", "GET", "/api/sessions/xu-p/messages", deviation="D2"))
    add(Case("fork xf-src", "POST", "/api/sessions/xf-src/fork", js({"id": "xf-child"})))
    add(Case("T62/D2 fork source messages", "GET", "/api/sessions/xf-src/messages", deviation="D2"))
    add(Case("fork child messages", "GET", "/api/sessions/xf-child/messages"))
    add(Case("fork into a/b", "POST", "/api/sessions/A/fork", js({"id": "a/b"})))
    add(Case("T44 GET a%2Fb", "GET", "/api/sessions/a%2Fb"))
    add(Case("T38 fork xo-src once", "POST", "/api/sessions/xo-src/fork", js({"id": "xo-c1"})))
    add(Case("T38 fork xo-src twice", "POST", "/api/sessions/xo-src/fork", js({"id": "xo-c2"})))
    add(Case("create CX", "POST", "/api/sessions", js({"id": "CX", "title": "cx title"})))
    add(Case("close CX as compression", "PATCH", "/api/sessions/CX", js({"end_reason": "compression"})))
    add(Case("fork of a compressed source", "POST", "/api/sessions/CX/fork", js({"id": "CX-cont"})))
    add(Case("compressed source's messages", "GET", "/api/sessions/CX/messages"))
    add(Case("title takeover by the continuation", "PATCH", "/api/sessions/CX-cont", js({"title": "cx title"})))
    add(Case("list after forks", "GET", "/api/sessions?limit=200"))
    add(Case("list after forks, children", "GET", "/api/sessions?limit=200&include_children=on"))

    # -- delete --------------------------------------------------------------------
    add(Case("T57 delete delegate parent", "DELETE", "/api/sessions/sd-dlg-parent"))
    for sid in ["sd-dlg-child", "sd-dlg-grandchild", "sd-dlg-marker-only", "sd-dlg-plain-child", "sd-dlg-branch-child"]:
        add(Case(f"T57 after delete {sid}", "GET", f"/api/sessions/{sid}"))
    add(Case("T58 delete again", "DELETE", "/api/sessions/sd-dlg-parent"))
    add(Case("T59 delete compression root", "DELETE", "/api/sessions/sd-cmp-root"))
    add(Case("T59 mid unlinked", "GET", "/api/sessions/sd-cmp-mid"))
    add(Case("T60 delete NOPE", "DELETE", "/api/sessions/NOPE"))
    add(Case("delete fork source", "DELETE", "/api/sessions/xf-src"))
    add(Case("delete a%2Fb", "DELETE", "/api/sessions/a%2Fb"))
    add(Case("delete with a body", "DELETE", "/api/sessions/Z", b"{not json"))
    add(Case("delete a compression tip", "DELETE", "/api/sessions/xc2-a2"))
    add(Case("delete a foreign delegate's parent", "DELETE", "/api/sessions/xd-p"))
    add(Case("foreign-marker child gone", "GET", "/api/sessions/xd-c"))
    add(Case("delete archived", "DELETE", "/api/sessions/sd-arc-plain"))
    add(Case("list after deletes", "GET", "/api/sessions?limit=200"))
    add(Case("list after deletes, children", "GET", "/api/sessions?limit=200&include_children=1"))

    # -- no key configured -----------------------------------------------------------
    add(Case("T4 no key, no header", "GET", "/api/sessions", auth=None, pair="nokey"))
    add(Case("no key, any bearer", "GET", "/api/sessions", auth="Bearer whatever", pair="nokey"))
    add(Case("no key, create", "POST", "/api/sessions", js({"id": "nk"}), auth=None, pair="nokey"))
    add(Case("no key, session key off chat", "GET", "/api/sessions/nk", auth=None, pair="nokey",
             headers={"X-Hermes-Session-Key": "abc"}))
    add(Case("T5 no key, session key on chat", "POST", "/api/sessions/NOPE/chat", js({"message": "x"}),
             auth=None, pair="nokey", headers={"X-Hermes-Session-Key": "abc"}))

    # -- state.db cannot be opened (T109) --------------------------------------------
    broken = "broken"
    add(Case("T109 list 503", "GET", "/api/sessions", pair=broken))
    add(Case("T109 get 503", "GET", "/api/sessions/x", pair=broken))
    add(Case("T109 create 503", "POST", "/api/sessions", js({"id": "x"}), pair=broken))
    add(Case("T109b create bad JSON 400", "POST", "/api/sessions", b"{", pair=broken))
    add(Case("T109 patch bad JSON 503", "PATCH", "/api/sessions/x", b"{", pair=broken))
    add(Case("T109 delete 503", "DELETE", "/api/sessions/x", pair=broken))
    add(Case("T109 messages 503", "GET", "/api/sessions/x/messages", pair=broken))
    add(Case("T109 fork 503", "POST", "/api/sessions/x/fork", b"{", pair=broken))
    add(Case("T109 auth before 503", "GET", "/api/sessions", auth=None, pair=broken))
    add(Case("T109 health still ok", "GET", "/health", auth=None, pair=broken))
    add(Case("T109 chat 503", "POST", "/api/sessions/x/chat", js({"message": "hi"}), pair=broken))
    add(Case("T109c chat long session key", "POST", "/api/sessions/x/chat", js({"message": "hi"}),
             headers={"X-Hermes-Session-Key": "k" * 300}, pair=broken))
    return c


# -- transport ------------------------------------------------------------------


@dataclass
class Answer:
    status: int
    content_type: str
    allow: str | None
    secure: bool
    body: bytes

    def shape(self) -> tuple[int, Any]:
        return self.status, decoded_body(self.body)


def send(port: int, case: Case, key: str | None) -> Answer:
    """One request over a fresh connection, bytes exactly as the case says."""
    headers: list[tuple[str, str | bytes]] = []
    if case.auth == "key":
        if key:
            headers.append(("Authorization", f"Bearer {key}"))
    elif case.auth is not None:
        headers.append(("Authorization", case.auth))
    headers += case.headers.items()
    answer = exchange(port, case.method, case.path, case.body, headers, announce_only=case.headers_only, timeout=60)
    return Answer(answer.status, answer.headers.get("content-type", ""), answer.headers.get("allow"),
                  SECURITY_HEADER in answer.headers, answer.body)


class Normaliser:
    """Replace values that legitimately differ between two runs."""

    def __init__(self) -> None:
        self.generated: dict[str, str] = {}

    def __call__(self, answer: Answer) -> tuple[Any, ...]:
        text = answer.body.decode("utf-8", "replace")
        text = _TS_RE.sub(lambda m: f'"{m.group(1)}": "<ts>"', text)
        text = _GEN_RE.sub(self._gen, text)
        return answer.status, answer.content_type, answer.allow, answer.secure, text

    def _gen(self, match: re.Match[str]) -> str:
        return self.generated.setdefault(match.group(0), f"<gen-{len(self.generated) + 1}>")


# -- seeding ----------------------------------------------------------------------


def seed(home: Path) -> None:
    """Write the same upstream-made rows into one home (the server there must already have opened it)."""
    for cmd in ([str(ORACLE_PY), str(ORACLE_DIR / "seed_state.py"), str(home), "--prefix", "sd"],
                [str(ORACLE_PY), str(Path(__file__).resolve()), "--seed-extra", str(home)]):
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
        if out.returncode != 0:
            raise SystemExit(f"seeding {home} failed:\n{out.stderr}")


def seed_extra(home: Path) -> None:
    """Runs under the oracle's Python: rows for preview, multimodal and resolution edge cases."""
    os.environ["HERMES_HOME"] = str(home)
    from hermes_state import SessionDB  # imported here: only importable in the oracle venv

    db = SessionDB(db_path=home / "state.db")

    def session(sid: str, *messages: tuple[str, Any], **kwargs: Any) -> None:
        db.create_session(sid, "api_server", model="mock-model", **kwargs)
        for role, content in messages:
            db.append_message(sid, role, content)
            time.sleep(0.002)

    try:
        session("xp-61", ("user", "b" * 61), ("assistant", "ok"))
        session("xp-pad", ("user", "   " + "a" * 70))
        session("xp-lines", ("user", "line1\nline2\r\nline3"))
        session("xp-empty", ("user", ""), ("user", "second"))
        session("xp-mm", ("user", [{"type": "text", "text": "look"},
                                   {"type": "image_url", "image_url": {"url": "http://x/y.png"}}]))
        db.append_message("xp-mm", "assistant", "thinking done", reasoning="r", reasoning_content="rc",
                          token_count=5, finish_reason="tool_calls",
                          tool_calls=[{"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}])
        db.append_message("xp-mm", "tool", "  tool output  ", tool_call_id="c1", tool_name="f")
        dropped = db.append_message("xp-mm", "user", "dropped later")
        db.append_message("xp-mm", "assistant", "also dropped")
        db.rewind_to_message("xp-mm", dropped)
        session("xf-src", ("user", "fork me please"), ("assistant", "sure"))
        session("xo-src", ("user", "fork order"), ("assistant", "ok"))
        # Compression tips: a closed sibling with newer messages loses to an open one.
        session("xc-root", ("user", "xc root"))
        db.end_session("xc-root", "compression")
        session("xc-b", ("user", "xc open older"), parent_session_id="xc-root")
        session("xc-a", ("user", "xc closed newer"), parent_session_id="xc-root")
        db.end_session("xc-a", "ws_orphan_reap")
        # A child that itself continues (compression) wins over an open one with newer messages.
        session("xc2-root", ("user", "xc2 root"))
        db.end_session("xc2-root", "compression")
        session("xc2-a", ("user", "xc2 continues"), parent_session_id="xc2-root")
        db.end_session("xc2-a", "compression")
        session("xc2-a2", ("user", "xc2 deep tip"), parent_session_id="xc2-a")
        db.set_session_title("xc2-a2", "xc2 tip title")
        session("xc2-b", ("user", "xc2 open newer"), parent_session_id="xc2-root")
        # Only tool and branch-marked children: no continuation at all.
        session("xc3-root", ("user", "xc3 root"))
        db.end_session("xc3-root", "compression")
        db.create_session("xc3-t", "tool", parent_session_id="xc3-root")
        db.append_message("xc3-t", "user", "tool child")
        session("xc3-br", ("user", "branch marked"), parent_session_id="xc3-root",
                model_config={"_branched_from": "xc3-root"})
        # A child carrying someone else's delegate marker is still deleted with its parent.
        session("xd-p", ("user", "xd parent"))
        session("xd-c", ("user", "xd child"), parent_session_id="xd-p", model_config={"_delegate_from": "elsewhere"})
        session("xu-p", ("user", "parent q"))
        session("xu-u", ("user", "untagged child q"), parent_session_id="xu-p")
        db.end_session("xu-p", "client_closed")
    finally:
        db.close()
    # Rows no SessionDB method writes, to exercise the readers' fallbacks (own SQL).
    conn = sqlite3.connect(home / "state.db")
    with conn:
        now = time.time()
        conn.execute("INSERT INTO sessions (id, source, started_at) VALUES ('xr-raw', 'api_server', ?)", (now,))
        rows = [("user", None, None), ("assistant", "\x00json:{broken", "not json"), ("tool", 42, "[]"),
                ("user", "\x00json:\"text\"", '{"a": 1}'), ("assistant", "", "")]
        for i, (role, content, calls) in enumerate(rows):
            conn.execute("INSERT INTO messages (session_id, role, content, tool_calls, timestamp) VALUES ('xr-raw', ?, ?, ?, ?)",
                         (role, content, calls, now + i))
    conn.close()


# -- report ---------------------------------------------------------------------


def show(shape: tuple[Any, ...]) -> str:
    status, ctype, allow, secure, text = shape
    if len(text) > 600:
        text = text[:600] + f"... ({len(text)} chars)"
    return f"{status} [{ctype}] allow={allow} secure={secure} {text}"


def explain(a: tuple[Any, ...], b: tuple[Any, ...]) -> str:
    """A short account of how two normalised answers differ (a line diff for JSON bodies)."""
    if a[:4] != b[:4] or not a[4].startswith("{") or not b[4].startswith("{"):
        return f"  oracle: {show(a)}\n  ours:   {show(b)}"
    lines = difflib.unified_diff(
        json.dumps(json.loads(a[4]), indent=1).splitlines(),
        json.dumps(json.loads(b[4]), indent=1).splitlines(),
        "oracle", "ours", n=2, lineterm="",
    )
    text = list(lines)
    if not text:
        return "  (same JSON, different bytes)\n  oracle: " + show(a) + "\n  ours:   " + show(b)
    return "\n".join("  " + line for line in text[:60])


def run(verbose: bool, keep: bool, quirks: bool = False) -> int:
    with Workbench("hs-oracle-diff-", keep) as bench:
        homes: dict[tuple[str, str], Path] = {}
        for (side, pair), port in PORTS.items():
            name = f"{side}-{pair}"
            if pair == "broken":
                # A directory where state.db should be: SQLite cannot open it, on either side.
                (bench.home(name) / "state.db").mkdir(parents=True)
            if side == "oracle":
                homes[side, pair] = bench.oracle(name, port, no_key=pair == "nokey")
            else:
                homes[side, pair] = bench.ours(name, port, no_key=pair == "nokey",
                                               extra=["--upstream-quirks"] if quirks else [])
        # Let each server create its state.db, then seed both the same way.
        for side in ("oracle", "ours"):
            send(PORTS[side, "key"], Case("init", "GET", "/api/sessions"), KEY)
            seed(homes[side, "key"])
        cases = build_cases()
        if quirks:  # every deviation switched off: each case must be identical
            cases = [dataclasses.replace(case, deviation=None, ours=None) for case in cases]
        return compare(cases, verbose, quirks)


def compare(cases: Iterable[Case], verbose: bool, quirks: bool = False) -> int:
    norm = {"oracle": Normaliser(), "ours": Normaliser()}
    same = expected = unexpected = declared_wrong = unexercised = 0
    per_deviation: dict[str, int] = {}
    per_pair: dict[str, int] = {}
    for case in cases:
        per_pair[case.pair] = per_pair.get(case.pair, 0) + 1
        key = None if case.pair == "nokey" else KEY
        theirs = send(PORTS["oracle", case.pair], case, key)
        ours = send(PORTS["ours", case.pair], case, key)
        a, b = norm["oracle"](theirs), norm["ours"](ours)
        # What only the oracle accepted is undone there; with --upstream-quirks ours accepted it too.
        for side in ("oracle", "ours") if quirks else ("oracle",):
            for undo in case.oracle_cleanup:
                send(PORTS[side, case.pair], undo, key)
        if case.deviation is None:
            if a == b:
                same += 1
                if verbose:
                    print(f"same      {case.name}: {show(a)}")
            else:
                unexpected += 1
                print(f"DIFF      {case.name}\n{explain(a, b)}")
            continue
        if a == b:
            unexercised += 1
            print(f"NO-DIFF   {case.name}: expected {case.deviation} to differ, both: {show(a)}")
            continue
        if case.ours is not None and ours.shape() != case.ours:
            declared_wrong += 1
            print(f"WRONG-{case.deviation} {case.name}\n  declared: {case.ours}\n  ours:     {show(b)}")
            continue
        expected += 1
        per_deviation[case.deviation] = per_deviation.get(case.deviation, 0) + 1
        print(f"expected  {case.deviation} {case.name}\n  oracle: {show(a)}\n  ours:   {show(b)}")
    total = same + expected + unexpected + declared_wrong + unexercised
    print(f"\n{total} requests: {same} identical, {expected} expected differences (declared deviations), "
          f"{unexpected} unexpected differences, {declared_wrong} deviations answered otherwise than declared, "
          f"{unexercised} declared deviations not observed")
    print("by server pair: " + ", ".join(f"{pair} {n}" for pair, n in per_pair.items()))
    print("expected differences: " + (", ".join(f"{d} x{n}" for d, n in sorted(per_deviation.items())) or "none"))
    return 0 if unexpected == declared_wrong == unexercised == 0 else 1


def main() -> int:
    parser = command_line(__doc__)
    parser.add_argument("--seed-extra", metavar="HOME", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.seed_extra:
        seed_extra(Path(args.seed_extra))
        return 0
    return run(args.verbose, args.keep, args.upstream_quirks)


if __name__ == "__main__":
    sys.exit(main())
