"""The audit: what the request journal shows a connector did against the session contract.

Each rule is a pure function over the journal's entries (oldest first) that yields
findings: the rule id, its severity, the journal seqs that show it, the session it is
about, and what the connector should have done instead, in the terms of the failure
tables in docs/testing-connectors.md. Rules only look at what the journal recorded, so
the whole audit is one pass or two over at most `JOURNAL_LIMIT` entries.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qsl, unquote

from hermes_server.testing.journal import Entry

ERROR, WARNING = "error", "warning"

# The calls whose effect a client cannot undo by asking again: create, patch, delete, fork,
# chat, chat stream, runs, responses, chat completions.
UNSAFE = frozenset({
    ("sessions", "POST"), ("session", "PATCH"), ("session", "DELETE"), ("session_fork", "POST"),
    ("session_chat", "POST"), ("session_chat_stream", "POST"), ("runs", "POST"), ("responses", "POST"),
    ("chat_completions", "POST"),
})
# The reads that show a connector what a call it was unsure of did: get, messages, list.
READS = frozenset({("session", "GET"), ("session_messages", "GET"), ("sessions", "GET")})
LIST = ("sessions", "GET")
# The writes that must follow a rotation to the id the answer named.
SESSION_WRITES = frozenset({
    ("session_chat", "POST"), ("session_chat_stream", "POST"), ("session_fork", "POST"), ("session", "PATCH"),
})
CHATS = frozenset({("session_chat", "POST"), ("session_chat_stream", "POST")})
# Body fields that carry a session id.
ID_FIELDS = ("id", "session_id")
_CONTROL = re.compile(r"[\r\n\x00]")
# What RFC 3986 allows unencoded in a path (unreserved, sub-delims, ':', '@', '/', and '%' escapes).
_PATH_CHARS = re.compile(r"[A-Za-z0-9\-._~!$&'()*+,;=:@/%]*")


@dataclass(frozen=True)
class Finding:
    """One thing the connector did that the contract says it should not have."""

    rule: str
    severity: str
    message: str
    requests: tuple[int, ...]
    session_id: str | None

    def as_json(self) -> dict[str, Any]:
        return {"rule": self.rule, "severity": self.severity, "message": self.message,
                "requests": list(self.requests), "session_id": self.session_id}


def _op(entry: Entry) -> tuple[str | None, str]:
    return entry.route, entry.method


def uncertain(entry: Entry) -> bool:
    """Whether the client could not know what the call did: no complete answer, or a 5xx."""
    return entry.outcome != "response" or (entry.status is not None and entry.status >= 500)


def _path_id(entry: Entry) -> str | None:
    """The session id of a `/api/sessions/{session_id}...` path (decoded), None for other routes."""
    if entry.template is None or "{session_id}" not in entry.template:
        return None
    prefix = entry.template.split("{session_id}", 1)[0]
    rest = entry.path[len(prefix):] if entry.path.startswith(prefix) else ""
    return unquote(rest.split("/", 1)[0]) or None


def _same_call(a: Entry, b: Entry) -> bool:
    return (a.method, a.path, a.query) == (b.method, b.path, b.query) and a.request_body == b.request_body \
        and a.request_bytes == b.request_bytes


def _reads(entry: Entry, ids: Iterable[str]) -> bool:
    """Whether `entry` is a read that shows the state of any of `ids` (a list shows every session)."""
    if _op(entry) not in READS or entry.status is None:
        return False
    return _op(entry) == LIST or any(i in entry.session_ids for i in ids)


def unsafe_replay(entries: Sequence[Entry]) -> Iterator[Finding]:
    for index, first in enumerate(entries):
        if _op(first) not in UNSAFE or not uncertain(first) or first.idempotency_key:
            continue
        for later in entries[index + 1:]:
            if _reads(later, first.session_ids) or (not first.session_ids and _op(later) in READS):
                break
            if _same_call(first, later):
                yield Finding("unsafe-replay", ERROR,
                              f"{first.method} {first.path} had an unknown outcome ({_outcome(first)}) and was sent "
                              "again unchanged: reconcile first (get the session or its messages, or list) and send "
                              "it again only if it did not happen (003: Create/Chat/Patch/Delete result lost or "
                              "uncertain; 000: Connector timeout or transport failure)",
                              (first.seq, later.seq), _first(first.session_ids))
                break


def stale_session_id(entries: Sequence[Entry]) -> Iterator[Finding]:
    for index, rotated in enumerate(entries):
        old, new = _path_id(rotated), rotated.answered_session_id
        if _op(rotated) not in CHATS or old is None or new is None or new == old:
            continue
        for later in entries[index + 1:]:
            if _op(later) in SESSION_WRITES and _path_id(later) == old:
                yield Finding("stale-session-id", ERROR,
                              f"the answer to request {rotated.seq} named session {new!r} (compression rotated "
                              f"{old!r}), but {later.method} {later.path} still used the old id: store the returned "
                              "session_id / X-Hermes-Session-Id and send every later turn, fork and patch there "
                              "(003: Returned session ID changed)",
                              (rotated.seq, later.seq), old)
                break


def fork_retry_without_inspection(entries: Sequence[Entry]) -> Iterator[Finding]:
    for index, fork in enumerate(entries):
        if _op(fork) != ("session_fork", "POST") or not (uncertain(fork) or (fork.status or 0) >= 400):
            continue
        source = _path_id(fork)
        child = fork.json_body().get("id")
        seen_source, seen_child = False, not isinstance(child, str) or not child
        for later in entries[index + 1:]:
            seen_source = seen_source or (source is not None and _reads(later, [source]))
            seen_child = seen_child or _reads(later, [child] if isinstance(child, str) else [])
            if seen_source and seen_child:
                break
            if _op(later) == ("session_fork", "POST") and _path_id(later) == source:
                yield Finding("fork-retry-without-inspection", ERROR,
                              f"the fork of {source!r} in request {fork.seq} failed or its outcome was unknown "
                              f"({_outcome(fork)}), and {source!r} was forked again before the source and the child "
                              "were read: get both rows (the source may already be closed `branched`, the child may "
                              "exist with the copied transcript) and do not fork again blindly "
                              "(003: Fork returned 400 or delivery failed)",
                              (fork.seq, later.seq), source)
                break


def control_character_id(entries: Sequence[Entry]) -> Iterator[Finding]:
    for entry in entries:
        ids = [unquote(entry.path)] + [v for k, v in entry.json_body().items() if k in ID_FIELDS and isinstance(v, str)]
        bad = next((value for value in ids if _CONTROL.search(value)), None)
        if bad is not None:
            yield Finding("control-character-id", ERROR,
                          f"{entry.method} {entry.path} sent a session id holding CR, LF or NUL ({bad!r}): refuse such "
                          "an id in the connector before sending it (000: 400 invalid_session_id)",
                          (entry.seq,), _path_id(entry))


def unencoded_id(entries: Sequence[Entry]) -> Iterator[Finding]:
    for entry in entries:
        if entry.template is not None and "{session_id}" in entry.template and not _PATH_CHARS.fullmatch(entry.path):
            yield Finding("unencoded-id", WARNING,
                          f"{entry.method} {entry.path!r} sent characters a path must percent-encode: encode the "
                          "session id as one path segment, exactly as given (003: 404 session_not_found, "
                          "verify routing and the exact case-sensitive id)",
                          (entry.seq,), _path_id(entry))


def _seconds(value: str | None) -> float | None:
    try:
        return float(value) if value is not None else None
    except ValueError:
        return None  # an HTTP-date: the faults and the run cap always send seconds


def retry_after_ignored(entries: Sequence[Entry]) -> Iterator[Finding]:
    for index, refused in enumerate(entries):
        wait = _seconds(refused.retry_after)
        if refused.status not in (429, 503) or wait is None or refused.clock is None:
            continue
        again = next((later for later in entries[index + 1:] if _same_call(refused, later)), None)
        if again is not None and again.clock is not None and again.clock - refused.clock < wait:
            yield Finding("retry-after-ignored", ERROR,
                          f"{refused.method} {refused.path} answered {refused.status} with Retry-After: "
                          f"{refused.retry_after}, and the same call came again {again.clock - refused.clock:.3f} s "
                          "later: wait at least as long as Retry-After says before retrying "
                          "(000: 503 session_db_unavailable; herm.run: 429)",
                          (refused.seq, again.seq), _first(refused.session_ids))


def _query(entry: Entry) -> dict[str, str]:
    return dict(parse_qsl(entry.query))


def zero_limit_list(entries: Sequence[Entry]) -> Iterator[Finding]:
    for entry in entries:
        if entry.method == "GET" and _query(entry).get("limit") == "0":
            yield Finding("zero-limit-list", WARNING,
                          f"GET {entry.path}?{entry.query} asked for limit=0, a page that can never hold a row: "
                          "ask for a positive limit and page with offset while has_more is true",
                          (entry.seq,), _path_id(entry))


def _short_page(entry: Entry) -> bool:
    """Whether a 200 list answer held fewer items than its limit asked for (a truncated body: unknown)."""
    query = _query(entry)
    if entry.method != "GET" or entry.status != 200 or not query.get("limit", "").isdigit():
        return False
    data = entry.response_json().get("data")
    return isinstance(data, list) and len(data) < int(query["limit"])


def page_past_end(entries: Sequence[Entry]) -> Iterator[Finding]:
    for index, page in enumerate(entries):
        if not _short_page(page):
            continue
        query = _query(page)
        offset = int(query.get("offset", "0")) if query.get("offset", "0").isdigit() else 0
        for later in entries[index + 1:]:
            if (later.method, later.route) != (page.method, page.route) or later.path != page.path:
                continue
            next_query = _query(later)
            next_offset = next_query.pop("offset", "0")
            same = next_query == {k: v for k, v in query.items() if k != "offset"}
            if same and next_offset.isdigit() and int(next_offset) > offset:
                yield Finding("page-past-end", WARNING,
                              f"request {page.seq} returned fewer rows than its limit (the last page), and "
                              f"request {later.seq} asked for the page after it: stop paging when a page is "
                              "shorter than its limit (has_more is false)",
                              (page.seq, later.seq), _path_id(page))
                break


def chat_after_close(entries: Sequence[Entry]) -> Iterator[Finding]:
    for index, close in enumerate(entries):
        closed = _op(close) == ("session", "PATCH") and close.json_body().get("end_reason") is not None
        if not (closed or _op(close) == ("session", "DELETE")) or close.status != 200:
            continue
        target = _path_id(close)
        for later in entries[index + 1:]:
            if _op(later) == ("session", "PATCH") and _path_id(later) == target:
                break  # reopened or changed again on purpose
            if _op(later) in CHATS and _path_id(later) == target:
                done = "closed" if closed else "deleted"
                yield Finding("chat-after-close", WARNING,
                              f"the connector {done} {target!r} (request {close.seq}) and then chatted on it "
                              f"(request {later.seq}): a turn on a {done} session "
                              + ("re-creates it" if not closed else "runs on a session the connector ended")
                              + "; start or fork a new session instead (race-turn-recreates)",
                              (close.seq, later.seq), target)
                break


def missing_credential(entries: Sequence[Entry]) -> Iterator[Finding]:
    for entry in entries:
        if entry.status == 401 and not entry.credential:
            yield Finding("missing-credential", WARNING,
                          f"{entry.method} {entry.path} was sent without a credential and got 401: send "
                          "`Authorization: Bearer KEY` on every call (000: 401 invalid_api_key)",
                          (entry.seq,), _path_id(entry))


def _outcome(entry: Entry) -> str:
    return entry.outcome.replace("_", " ") if entry.outcome != "response" else f"status {entry.status}"


def _first(ids: Sequence[str]) -> str | None:
    return ids[0] if ids else None


Rule = Callable[[Sequence[Entry]], Iterator[Finding]]
# Every rule by id, in the order docs/testing-connectors.md lists them.
RULES: dict[str, Rule] = {
    "unsafe-replay": unsafe_replay,
    "stale-session-id": stale_session_id,
    "fork-retry-without-inspection": fork_retry_without_inspection,
    "control-character-id": control_character_id,
    "retry-after-ignored": retry_after_ignored,
    "zero-limit-list": zero_limit_list,
    "page-past-end": page_past_end,
    "chat-after-close": chat_after_close,
    "unencoded-id": unencoded_id,
    "missing-credential": missing_credential,
}


def audit(entries: Iterable[Entry]) -> list[Finding]:
    """Every rule's findings over `entries` (oldest first), ordered by the first request each names."""
    recorded = list(entries)
    findings = [finding for rule in RULES.values() for finding in rule(recorded)]
    return sorted(findings, key=lambda f: (f.requests, f.rule))


def report(entries: Iterable[Entry]) -> dict[str, Any]:
    """The `GET /_fixture/audit` answer."""
    recorded = list(entries)
    return {"object": "hermes_server.audit", "checked": len(recorded),
            "findings": [finding.as_json() for finding in audit(recorded)]}
