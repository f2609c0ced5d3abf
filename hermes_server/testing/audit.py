"""The audit: what the request journal shows a connector did against the session contract.

Each rule is a pure function over the journal's entries (oldest first) that yields
findings: the rule id, its severity, the journal seqs that show it, the session it is
about, and what the connector should have done instead, in the terms of the failure
tables in docs/testing-connectors.md. Rules only look at what the journal recorded and
at what each served operation says it does (its `Effect`: a read, an unsafe call, a write
to the session its path names, a turn on it, a fork), so a new route is classified by its
own declaration, and the whole audit is one pass or two over at most `JOURNAL_LIMIT` entries.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from collections import defaultdict
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Any
from urllib.parse import parse_qsl, unquote

from hermes_server.domain import route_ids
from hermes_server.http.routing import Effect
from hermes_server.testing.journal import Entry

ERROR, WARNING = "error", "warning"

# What each served (route, method) does (testing/faults.py `ServedRoutes.effects`).
Effects = Mapping[tuple[str, str], Effect]
# Closing a session (with `end_reason`) and deleting it.
PATCH_SESSION = (route_ids.SESSION, "PATCH")
DELETE_SESSION = (route_ids.SESSION, "DELETE")
# Body fields that carry a session id.
ID_FIELDS = ("id", "session_id")
_CONTROL = re.compile(r"[\r\n\x00]")
_ESCAPED_CONTROL = re.compile(rb"\\[rn]|\\u000[0adAD]")
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


class Call:
    """One journal entry with what the rules ask of it worked out once (op, path id, query, body)."""

    def __init__(self, index: int, entry: Entry, effects: Effects) -> None:
        self.index = index
        self.entry = entry
        self.op = (entry.route, entry.method)
        self.effect = effects.get((entry.route or "", entry.method), Effect.NONE)
        self.path_id = _path_id(entry)
        self.query = dict(parse_qsl(entry.query))
        # What makes two deliveries "the same call": method, target and body.
        self.key = (entry.method, entry.path, entry.query, bytes(entry.request_body), entry.request_bytes)

    @cached_property
    def body(self) -> dict[str, Any]:
        """The request body as a JSON object, parsed only for the calls a rule reads it of."""
        return self.entry.json_body()


class Traffic:
    """The journal's calls, with indexes so that each rule's "the next such call after this one"
    is a lookup, not a scan: the audit of a full journal stays linear."""

    def __init__(self, entries: Sequence[Entry], effects: Effects) -> None:
        # In the order the connector sent them: a journal seq is given when a request finishes, so a
        # chat sent before a delete that overtook it would otherwise read as a chat after the delete.
        ordered = sorted(entries, key=lambda entry: (entry.time, entry.seq))
        self.calls = [Call(index, entry, effects) for index, entry in enumerate(ordered)]
        self.same: dict[tuple[Any, ...], list[int]] = defaultdict(list)
        self.reads: dict[str, list[int]] = defaultdict(list)
        self.lists: list[int] = []
        self.by_path_id: dict[tuple[str | None, str], list[int]] = defaultdict(list)
        for call in self.calls:
            self.same[call.key].append(call.index)
            self.by_path_id[(call.path_id, call.entry.method)].append(call.index)
            if Effect.READ in call.effect and call.entry.status is not None:
                if Effect.LIST in call.effect:
                    self.lists.append(call.index)
                for session_id in call.entry.session_ids:
                    self.reads[session_id].append(call.index)

    def next_same(self, call: Call) -> Call | None:
        """The next delivery of the same call."""
        return self._at(_after(self.same[call.key], call.index))

    def next_on(self, call: Call, session_id: str | None, *methods: str) -> list[Call]:
        """The later calls whose path names `session_id`, with one of `methods`, oldest first."""
        later = [index for method in methods for index in self.by_path_id[(session_id, method)] if index > call.index]
        return [self.calls[index] for index in sorted(later)]

    def first_read(self, call: Call, ids: Iterable[str], any_session: bool = False) -> int:
        """Index of the first read after `call` that shows one of `ids` (a list shows them all;
        with `any_session`, any read does); len(calls) when there is none."""
        found = [_after(self.lists, call.index), *(_after(self.reads[i], call.index) for i in ids)]
        if any_session:
            found += [_after(indexes, call.index) for indexes in self.reads.values()]
        return min((index for index in found if index is not None), default=len(self.calls))

    def _at(self, index: int | None) -> Call | None:
        return None if index is None else self.calls[index]


def _after(indexes: list[int], index: int) -> int | None:
    """The first of the sorted `indexes` greater than `index`."""
    at = bisect_right(indexes, index)
    return indexes[at] if at < len(indexes) else None


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


def unsafe_replay(traffic: Traffic) -> Iterator[Finding]:
    for call in traffic.calls:
        first = call.entry
        if Effect.UNSAFE not in call.effect or not uncertain(first) or first.idempotency_key:
            continue
        again = traffic.next_same(call)
        if again is None or traffic.first_read(call, first.session_ids, not first.session_ids) < again.index:
            continue
        yield Finding("unsafe-replay", ERROR,
                      f"{first.method} {first.path} had an unknown outcome ({_outcome(first)}) and was sent "
                      "again unchanged: reconcile first (get the session or its messages, or list) and send "
                      "it again only if it did not happen (003: Create/Chat/Patch/Delete result lost or "
                      "uncertain; 000: Connector timeout or transport failure)",
                      (first.seq, again.entry.seq), _first(first.session_ids))


def stale_session_id(traffic: Traffic) -> Iterator[Finding]:
    for call in traffic.calls:
        old, new = call.path_id, call.entry.answered_session_id
        if Effect.TURN not in call.effect or old is None or new is None or new == old:
            continue
        later = next((c for c in traffic.next_on(call, old, "POST", "PATCH") if Effect.WRITE in c.effect), None)
        if later is not None:
            yield Finding("stale-session-id", ERROR,
                          f"the answer to request {call.entry.seq} named session {new!r} (compression rotated "
                          f"{old!r}), but {later.entry.method} {later.entry.path} still used the old id: store the "
                          "returned session_id / X-Hermes-Session-Id and send every later turn, fork and patch "
                          "there (003: Returned session ID changed)",
                          (call.entry.seq, later.entry.seq), old)


def fork_retry_without_inspection(traffic: Traffic) -> Iterator[Finding]:
    for call in traffic.calls:
        fork = call.entry
        if Effect.FORK not in call.effect or not (uncertain(fork) or (fork.status or 0) >= 400):
            continue
        source, child = call.path_id, call.body.get("id")
        again = next((c for c in traffic.next_on(call, source, "POST") if c.op == call.op), None)
        if again is None or source is None:
            continue
        inspected = max(traffic.first_read(call, [source]),
                        traffic.first_read(call, [child]) if isinstance(child, str) and child else -1)
        if inspected < again.index:
            continue
        yield Finding("fork-retry-without-inspection", ERROR,
                      f"the fork of {source!r} in request {fork.seq} failed or its outcome was unknown "
                      f"({_outcome(fork)}), and {source!r} was forked again before the source and the child "
                      "were read: get both rows (the source may already be closed `branched`, the child may "
                      "exist with the copied transcript) and do not fork again blindly "
                      "(003: Fork returned 400 or delivery failed)",
                      (fork.seq, again.entry.seq), source)


def control_character_id(traffic: Traffic) -> Iterator[Finding]:
    for call in traffic.calls:
        entry = call.entry
        ids = [unquote(entry.path)]
        if _ESCAPED_CONTROL.search(entry.request_body):  # JSON can only carry them escaped
            ids += [v for k, v in call.body.items() if k in ID_FIELDS and isinstance(v, str)]
        bad = next((value for value in ids if _CONTROL.search(value)), None)
        if bad is not None:
            yield Finding("control-character-id", ERROR,
                          f"{entry.method} {entry.path} sent a session id holding CR, LF or NUL ({bad!r}): refuse such "
                          "an id in the connector before sending it (000: 400 invalid_session_id)",
                          (entry.seq,), call.path_id)


def unencoded_id(traffic: Traffic) -> Iterator[Finding]:
    for call in traffic.calls:
        entry = call.entry
        if entry.template is not None and "{session_id}" in entry.template and not _PATH_CHARS.fullmatch(entry.path):
            yield Finding("unencoded-id", WARNING,
                          f"{entry.method} {entry.path!r} sent characters a path must percent-encode: encode the "
                          "session id as one path segment, exactly as given (003: 404 session_not_found, "
                          "verify routing and the exact case-sensitive id)",
                          (entry.seq,), call.path_id)


def _seconds(value: str | None) -> float | None:
    try:
        return float(value) if value is not None else None
    except ValueError:
        return None  # an HTTP-date: the faults and the run cap always send seconds


def retry_after_ignored(traffic: Traffic) -> Iterator[Finding]:
    for call in traffic.calls:
        refused = call.entry
        wait = _seconds(refused.retry_after)
        if refused.status not in (429, 503) or wait is None or refused.clock is None:
            continue
        again = traffic.next_same(call)
        if again is None or again.entry.clock is None or again.entry.clock - refused.clock >= wait:
            continue
        yield Finding("retry-after-ignored", ERROR,
                      f"{refused.method} {refused.path} answered {refused.status} with Retry-After: "
                      f"{refused.retry_after}, and the same call came again "
                      f"{again.entry.clock - refused.clock:.3f} s later: wait at least as long as Retry-After "
                      "says before retrying (000: 503 session_db_unavailable; a 429 of a rate limit)",
                      (refused.seq, again.entry.seq), _first(refused.session_ids))


def zero_limit_list(traffic: Traffic) -> Iterator[Finding]:
    for call in traffic.calls:
        entry = call.entry
        if entry.method == "GET" and call.query.get("limit") == "0":
            yield Finding("zero-limit-list", WARNING,
                          f"GET {entry.path}?{entry.query} asked for limit=0, a page that can never hold a row: "
                          "ask for a positive limit and page with offset while has_more is true",
                          (entry.seq,), call.path_id)


def _short_page(call: Call) -> bool:
    """Whether a 200 list answer held fewer items than its limit asked for (a truncated body: unknown)."""
    entry, limit = call.entry, call.query.get("limit", "")
    if entry.method != "GET" or entry.status != 200 or not limit.isdigit():
        return False
    data = entry.response_json().get("data")
    return isinstance(data, list) and len(data) < int(limit)


def _offset(call: Call) -> int:
    offset = call.query.get("offset", "0")
    return int(offset) if offset.isdigit() else 0


def page_past_end(traffic: Traffic) -> Iterator[Finding]:
    pages: dict[tuple[Any, ...], list[Call]] = defaultdict(list)
    for call in traffic.calls:
        if call.entry.method == "GET" and "limit" in call.query:
            filters = tuple(sorted((k, v) for k, v in call.query.items() if k != "offset"))
            pages[(call.entry.path, filters)].append(call)
    for series in pages.values():
        for at, page in enumerate(series):
            later = next((c for c in series[at + 1:] if _offset(c) > _offset(page)), None)
            if later is not None and _short_page(page):
                yield Finding("page-past-end", WARNING,
                              f"request {page.entry.seq} returned fewer rows than its limit (the last page), and "
                              f"request {later.entry.seq} asked for the page after it: stop paging when a page is "
                              "shorter than its limit (has_more is false)",
                              (page.entry.seq, later.entry.seq), page.path_id)


def chat_after_close(traffic: Traffic) -> Iterator[Finding]:
    for call in traffic.calls:
        closed = call.op == PATCH_SESSION and call.body.get("end_reason") is not None
        if not (closed or call.op == DELETE_SESSION) or call.entry.status != 200:
            continue
        target = call.path_id
        later = next((c for c in traffic.next_on(call, target, "POST", "PATCH")
                      if Effect.TURN in c.effect or c.op == PATCH_SESSION), None)
        if later is None or Effect.TURN not in later.effect:
            continue  # never chatted on, or reopened / changed again on purpose first
        done = "closed" if closed else "deleted"
        yield Finding("chat-after-close", WARNING,
                      f"the connector {done} {target!r} (request {call.entry.seq}) and then chatted on it "
                      f"(request {later.entry.seq}): a turn on a {done} session "
                      + ("runs on a session the connector ended" if closed else "re-creates it")
                      + "; start or fork a new session instead (race-turn-recreates)",
                      (call.entry.seq, later.entry.seq), target)


def missing_credential(traffic: Traffic) -> Iterator[Finding]:
    for call in traffic.calls:
        entry = call.entry
        if entry.status == 401 and not entry.credential:
            yield Finding("missing-credential", WARNING,
                          f"{entry.method} {entry.path} was sent without a credential and got 401: send "
                          "`Authorization: Bearer KEY` on every call (000: 401 invalid_api_key)",
                          (entry.seq,), call.path_id)


def _outcome(entry: Entry) -> str:
    return entry.outcome.replace("_", " ") if entry.outcome != "response" else f"status {entry.status}"


def _first(ids: Sequence[str]) -> str | None:
    return ids[0] if ids else None


Rule = Callable[[Traffic], Iterator[Finding]]
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


def audit(entries: Iterable[Entry], effects: Effects) -> list[Finding]:
    """Every rule's findings over `entries` (oldest first), ordered by the first request each names;
    `effects` says what each served (route, method) does."""
    traffic = Traffic(list(entries), effects)
    findings = [finding for rule in RULES.values() for finding in rule(traffic)]
    return sorted(findings, key=lambda f: (f.requests, f.rule))


def report(entries: Iterable[Entry], effects: Effects) -> dict[str, Any]:
    """The `GET /_fixture/audit` answer."""
    recorded = list(entries)
    return {"object": "hermes_server.audit", "checked": len(recorded),
            "findings": [finding.as_json() for finding in audit(recorded, effects)]}
