"""OpenAPI components of the session resource routes (routes/sessions.py): the session and
message objects, their lists, what create, patch and fork take and refuse, and what each
operation does beyond its fields (its description: the hazards a connector must handle)."""

from __future__ import annotations

from typing import Any

from hermes_server.openapi.build import (
    Components,
    error_answer,
    json_answer,
    json_object,
    nullable,
    query_parameter,
    record,
    schema_ref,
    with_example,
)
from hermes_server.openapi.common import ANY, COUNTER, STRINGIFIED, text, text_or_null

# What every title a request sets must be (domain/titles.py).
_TITLE_RULES = ("At most 100 characters once sanitised (control and invisible format characters removed, whitespace "
                "runs collapsed to one space, trimmed) and unique among sessions (case-sensitive); else 400 "
                "`invalid_title`.")

SESSION_PROPERTIES: dict[str, Any] = {
    "id": {"type": "string"},
    "source": nullable("string"),
    "user_id": nullable("string"),
    "model": nullable("string"),
    "title": nullable("string"),
    "started_at": {"type": "number"},
    "ended_at": nullable("number"),
    "end_reason": nullable("string"),
    "message_count": nullable("integer"),
    "tool_call_count": nullable("integer"),
    "input_tokens": nullable("integer"),
    "output_tokens": nullable("integer"),
    "cache_read_tokens": nullable("integer"),
    "cache_write_tokens": nullable("integer"),
    "reasoning_tokens": nullable("integer"),
    "estimated_cost_usd": nullable("number"),
    "actual_cost_usd": nullable("number"),
    "api_call_count": nullable("integer"),
    "parent_session_id": nullable("string"),
    "last_active": nullable("number"),
    "preview": nullable("string"),
    "_lineage_root_id": nullable("string"),
    "has_system_prompt": {"type": "boolean"},
    "has_model_config": {"type": "boolean"},
}
# Keys every projection of a whole row carries (list rows add last_active and preview).
_SESSION_REQUIRED = [key for key in SESSION_PROPERTIES if key not in {"last_active", "preview", "_lineage_root_id"}]

SCHEMAS: dict[str, Any] = {
    "Session": json_object(SESSION_PROPERTIES, _SESSION_REQUIRED),
    "SessionListItem": json_object(SESSION_PROPERTIES, [*_SESSION_REQUIRED, "last_active", "preview"]),
    "SessionEnvelope": record({
        "object": {"const": "hermes.session"},
        "session": schema_ref("Session"),
    }),
    "SessionList": record({
        "object": {"const": "list"},
        "data": {"type": "array", "items": schema_ref("SessionListItem")},
        "limit": COUNTER,
        "offset": COUNTER,
        "has_more": {"type": "boolean"},
    }),
    "SessionDeleted": record({
        "object": {"const": "hermes.session.deleted"},
        "id": {"type": "string"},
        "deleted": {"type": "boolean"},
    }),
    "Message": record({
        "id": {"type": "integer"},
        "session_id": {"type": "string"},
        "role": {"type": "string"},
        "content": ANY,
        "tool_call_id": nullable("string"),
        "tool_calls": ANY,
        "tool_name": nullable("string"),
        "timestamp": {"type": "number"},
        "token_count": nullable("integer"),
        "finish_reason": nullable("string"),
        "reasoning": nullable("string"),
        "reasoning_content": nullable("string"),
    }),
    "MessageList": record({
        "object": {"const": "list"},
        "session_id": {"type": "string"},
        "data": {"type": "array", "items": schema_ref("Message")},
    }),
    "CreateSession": with_example({"id": "demo", "title": "Demo"}, json_object({
        "id": text("The new session's id: at most 256 characters once trimmed, without control characters, `/`, "
                   "`\\` or `..`, and not starting like a drive (`C:`); else 400 `invalid_session_id`. Empty or "
                   "absent (or any falsy JSON value): `session_id`, else a generated `api_<unix seconds>_<8 hex>`."
                   + STRINGIFIED),
        "session_id": text("Read as `id` when `id` is absent or empty."),
        "title": text_or_null(_TITLE_RULES + " null or absent: untitled." + STRINGIFIED),
        "model": text_or_null("The session's model; empty or absent: the served model name." + STRINGIFIED),
        "system_prompt": text_or_null("Stored with the session (the first chat turn replaces it with the agent's "
                                      "prompt, as upstream); anything but a string or null is 400 "
                                      "`invalid_system_prompt`."),
    }, closed=False)),
    "PatchSession": with_example({"title": "Renamed"}, json_object({
        "title": text_or_null(_TITLE_RULES + " null or empty clears the title. The title a compression ancestor "
                              "holds moves to this session." + STRINGIFIED),
        "end_reason": text("Closes the session with this reason when it is not empty. First close wins: a closed "
                           "session keeps its first reason and `ended_at`, and nothing reopens it. The reason is "
                           "free text, stored as sent (Hermes itself writes `cli_close`, `session_reset`, "
                           "`new_session` …; connectors commonly send `client_closed`); two have a meaning: a "
                           "session closed `branched` lists its later children (forks), one closed `compression` "
                           "is followed to its continuation. Falsy values (`\"\"`, null, 0, false) change "
                           "nothing; any other JSON value is stored as its `str()`."),
    })),
    "ForkSession": with_example({"title": "A branch"}, json_object({
        "id": text("The fork's id: any text that is not blank, without CR, LF or NUL (no length or path checks, as "
                   "upstream); taken → 409. Empty or absent (or any falsy JSON value): `session_id`, else a generated "
                   "`api_<unix seconds>_<8 hex>`." + STRINGIFIED),
        "session_id": text("Read as `id` when `id` is absent or empty."),
        "title": text_or_null(_TITLE_RULES + " null or absent: the source's title, numbered when taken (`Title "
                              "#2`, `Title #3` …; untitled sources share `fork`, `fork #2` …), which can itself be "
                              "too long." + STRINGIFIED),
    }, closed=False)),
}

_INVALID_BODY = "Invalid JSON (`Invalid JSON in request body`, also for an empty body) or a body that is not an object"
_INVALID_TITLE = ("a title too long once sanitised (`invalid_title`, `Title too long (N chars, max 100)`) or held by "
                  "another session (`invalid_title`)")
_LONE_SURROGATE = "text that is not valid Unicode, a lone surrogate (`param` names the field)"

RESPONSES: dict[str, Any] = {
    # The document adds `links` to it: every served operation on the session an answer carries.
    "Session": json_answer("The session, as the client-safe projection.", "SessionEnvelope"),
    "SessionList": json_answer("One page of sessions.", "SessionList"),
    "SessionDeleted": json_answer("The session row is gone.", "SessionDeleted"),
    "MessageList": json_answer("The active messages of the resolved transcript.", "MessageList"),
    "CreateSessionBadRequest": error_answer(
        f"{_INVALID_BODY}; an id refused (`invalid_session_id`: `Invalid session ID`, or `Session ID too long` past "
        f"256 characters); a `system_prompt` that is not text (`invalid_system_prompt`); {_INVALID_TITLE}, with no "
        f"session left; or {_LONE_SURROGATE}."),
    "PatchSessionBadRequest": error_answer(
        f"{_INVALID_BODY}; a field PATCH does not take (`unsupported_session_field`, `Unsupported session fields: "
        f"…`, nothing applied); {_INVALID_TITLE}, the session left open; or {_LONE_SURROGATE}."),
    "ForkSessionBadRequest": error_answer(
        f"{_INVALID_BODY}; a fork id that is blank or holds CR, LF or NUL (`invalid_session_id`), nothing written; "
        f"or {_INVALID_TITLE}, given or derived. A refused title comes last: the source is already closed "
        "`branched` and the fork exists, untitled, with its messages."),
}

# What each operation does beyond its fields and answers, and the hazards a connector must handle.
LIST_SESSIONS = """\
Sessions, most recently active first: a session's activity is its latest message anywhere in its \
compression chain (else its start), ties by start, then id. Archived sessions are never listed. Without \
`include_children`, child sessions are left out, except forks of a session the fork itself closed \
(`branched`).

**Compression tips.** A session whose context was compressed goes on in a child session (a \
continuation). The list shows the whole chain as one row: the latest continuation (the *tip*: its `id`, \
`title`, `ended_at`, `end_reason`, `message_count`, `preview`, `last_active`, `model`), with \
`_lineage_root_id` naming the chain's first session, whose `started_at`, token counts and costs the row \
keeps. A row's `id` is then not the session you created: `_lineage_root_id` says which one it stands for. \
With `include_children=true` every row is listed as stored instead.

`has_more` is true exactly when the page is full (so `limit=0` answers no rows and `has_more: true`)."""

CREATE_SESSION = """\
A new open session, `source` `api_server`, with the `id` given or a generated one. Unknown fields are \
ignored. The body is read before the database: invalid JSON is a 400 even while state.db is \
unavailable (503 otherwise comes first). A refused title leaves no session behind."""

GET_SESSION = """\
The session with exactly this id (case-sensitive): archived sessions too, and a compressed session as \
its own closed row (`end_reason` `compression`); unlike the list and /messages, get never follows a \
compression chain to its tip."""

PATCH_SESSION = """\
Renames or closes the session. A field PATCH does not take is refused and nothing is applied; a missing \
session is 404 before the body is read. `{}` changes nothing and answers the session.

**First close wins.** `end_reason` closes the session only while it is open: a closed session keeps its \
first reason and `ended_at`, and the answer is a 200 showing them (compare `end_reason` to learn whether \
yours took). Nothing reopens a session; a closed one can still chat.

**Not atomic.** The title is written first, then the close, each in its own transaction: a refused title \
(400) closes nothing, and a storage failure between them leaves the new title on an open session."""

DELETE_SESSION = """\
Deletes the session and its messages, and its delegate subagent sessions with theirs. Every other child \
(forks, compression continuations) stays as a session of its own; a continuation is then listed as its own \
chain. A second DELETE is 404."""

SESSION_MESSAGES = """\
The active messages of the transcript, oldest first. The 404 is decided on the exact id; then the id is \
followed down its compression chain, as the list does, and the answer's `session_id` names the session \
whose messages these are: after compression, the tip, not the id asked for. A turn run on a compressed \
session itself (chat takes the exact id) is therefore not in its /messages. A fork never takes over its \
source's messages here (0.19.0's /messages shows the newest fork's: docs/differences.md, D2)."""

FORK_SESSION = """\
Closes the source `branched` (first close wins: a closed source keeps its reason), creates the fork as its \
child with a copy of its active messages (their timestamps kept, so the fork sorts at the source's last \
activity), then titles it.

**Not atomic.** Those are separate writes and the title is checked last: a title in use or too long (also \
one derived from a source title of 98 characters or more) is a 400 after the source was closed and the \
fork created, untitled, with its messages; both stay. Retrying with another `id` makes a second fork: \
instead, GET the fork's id and PATCH its title. A storage failure part-way is a 503 whose message says \
which steps were stored. A 409 (the id is taken) comes before any write.

A fork of an open source is listed; a fork of a source already closed for another reason is not (it is \
found with `include_children=true`)."""

COMPONENTS: Components = {
    "schemas": SCHEMAS,
    "responses": RESPONSES,
    "parameters": {
        "limit": query_parameter("limit", "Page size; default 50, capped at 200. Unparsable or negative values "
                                          "mean the default."),
        "offset": query_parameter("offset", "Rows to skip; default 0, capped at 1,000,000."),
        "source": query_parameter("source", "Exact match on the session source."),
        "include_children": query_parameter("include_children", "1/true/yes/on include child sessions."),
    },
}
