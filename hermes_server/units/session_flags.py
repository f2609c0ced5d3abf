"""0.20.4's session flags (domain/session_flags.py; https://github.com/NousResearch/hermes-agent/pull/86797):
`pinned`, `archived`, `hidden` on the session object; PATCH of them and of `unread` (400 `invalid_session_field` for a
value that is not a JSON boolean); the list leaving hidden rows out, back-filling pinned ones past
the page and counting only unpinned rows for `has_more`; and the columns they are stored in."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace
from typing import Any

from hermes_server.config import Settings
from hermes_server.context import Behaviour
from hermes_server.domain import route_ids
from hermes_server.domain.projection import FLAGGED_SESSIONS
from hermes_server.domain.session_flags import SHOWN_FLAGS
from hermes_server.http.routing import Amendment
from hermes_server.openapi.build import error_answer, extended, json_answer
from hermes_server.openapi.sessions_schemas import SCHEMAS as SESSION_SCHEMAS
from hermes_server.store.schema import Column, Reading
from hermes_server.units.unit import Unit

# `archived` is already in v22; the others came with v26-v28 (hidden, and the read watermark),
# declared as in v30's SCHEMA_SQL.
COLUMNS = (
    Column("sessions", "pinned", "INTEGER NOT NULL DEFAULT 0"),
    Column("sessions", "hidden", "INTEGER NOT NULL DEFAULT 0"),
    Column("sessions", "last_read_at", "REAL"),
)
# An index of hermes-server's own (the `hs_` prefix of store/migrate.py's HS_INDEXES). The list
# back-fills every pinned row past its page: without this partial index each list scanned the whole
# table for them (10k sessions: 1.5 ms of a 3.6 ms list; 13 µs with it).
INDEXES = ("CREATE INDEX IF NOT EXISTS hs_sessions_pinned ON sessions(pinned) WHERE pinned != 0",)


def _flagged(behaviour: Behaviour, settings: Settings) -> Behaviour:
    return replace(behaviour, sessions=FLAGGED_SESSIONS)


_BOOLEAN = {"type": "boolean"}


def _placed(keys: Iterable[str], new: Iterable[str], before: str) -> list[str]:
    listed = list(keys)
    at = listed.index(before)
    return [*listed[:at], *new, *listed[at:]]


def _with_flags(schema: str) -> dict[str, Any]:
    """0.19.0's session schema `schema` with the flags, required, where the answers put them."""
    base = SESSION_SCHEMAS[schema]
    keys = _placed(base["properties"], SHOWN_FLAGS, "has_system_prompt")
    return {**base, "properties": {key: base["properties"].get(key, _BOOLEAN) for key in keys},
            "required": _placed(base["required"], SHOWN_FLAGS, "has_system_prompt")}


UNIT = Unit(
    name="session_flags",
    behaviour=_flagged,
    columns=COLUMNS,
    indexes=INDEXES,
    reading=Reading(flags=True),
    amendments=(Amendment(route_ids.SESSION, "PATCH", responses={400: "InvalidSessionPatch"}, note=(
        "The flags (`pinned`, `archived`, `hidden`, `unread`) are set on every session of the compression chain, "
        "after the title and before the close, each step its own write; every flag is checked before anything is "
        "written. An archived or hidden session leaves the list; get still answers it.")),),
    components={
        "schemas": {
            "Session": _with_flags("Session"),
            "SessionListItem": _with_flags("SessionListItem"),
            "PatchSession": extended(SESSION_SCHEMAS["PatchSession"], {
                **{flag: {**_BOOLEAN, "description": "Set on every session of the compression lineage."}
                   for flag in SHOWN_FLAGS},
                "unread": {**_BOOLEAN, "description": "true: unread (the read watermark cleared); false: read now. "
                                                      "Set on every session of the compression lineage."},
            }, required=False),
        },
        "responses": {
            "SessionList": json_answer("One page of sessions, archived and hidden ones left out; pinned sessions "
                                       "ranked past the page follow it, in activity order, and `has_more` counts "
                                       "only the unpinned rows against `limit`.", "SessionList"),
            "InvalidSessionPatch": error_answer("Invalid JSON, a body that is not an object, a field PATCH does not "
                                                "take (`unsupported_session_field`), a flag that is not a JSON "
                                                "boolean (`invalid_session_field`, \"'pinned' must be a "
                                                "boolean\"; nothing written), or a title too long or held by "
                                                "another session (`invalid_title`; nothing closed)."),
        },
    },
)
