"""OpenAPI components of the session resource routes (routes/sessions.py): the session and
message objects, their lists, and what create, patch and fork take."""

from __future__ import annotations

from typing import Any

from hermes_server.openapi.build import (
    Components,
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
        "title": text_or_null(_TITLE_RULES + " null or absent: the source's title numbered (`Title #2`, …; `fork "
                              "#2` for an untitled source), which can itself be too long." + STRINGIFIED),
    }, closed=False)),
}

RESPONSES: dict[str, Any] = {
    # The document adds `links` to it: every served operation on the session an answer carries.
    "Session": json_answer("The session, as the client-safe projection.", "SessionEnvelope"),
    "SessionList": json_answer("One page of sessions.", "SessionList"),
    "SessionDeleted": json_answer("The session row is gone.", "SessionDeleted"),
    "MessageList": json_answer("The active messages of the resolved transcript.", "MessageList"),
}

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
