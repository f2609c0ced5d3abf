"""0.20.4's message paging of `GET /api/sessions/{id}/messages` (domain/paging.py): `limit`, `offset`,
`order`, the `pagination` block, and 400 `invalid_pagination`."""

from __future__ import annotations

from dataclasses import replace

from hermes_server.config import Settings
from hermes_server.context import Behaviour
from hermes_server.domain import route_ids
from hermes_server.domain.paging import MAX_LIMIT, ORDERS, requested_page
from hermes_server.http.routing import Amendment
from hermes_server.openapi.build import error_answer, extended, json_answer, query_parameter
from hermes_server.openapi.common import COUNTER
from hermes_server.openapi.sessions_schemas import SCHEMAS as SESSION_SCHEMAS
from hermes_server.units.unit import Unit


def _paged(behaviour: Behaviour, settings: Settings) -> Behaviour:
    return replace(behaviour, message_pages=requested_page)


UNIT = Unit(
    name="message_paging",
    behaviour=_paged,
    amendments=(Amendment(route_ids.SESSION_MESSAGES, "GET", query=("message_limit", "message_offset",
                                                                     "message_order"),
                          responses={400: "InvalidPagination"}),),
    components={
        "parameters": {
            "message_limit": query_parameter("limit", f"Messages in the page; {MAX_LIMIT} when omitted, never more than "
                                             f"{MAX_LIMIT}. A non-negative integer as Python's int() reads it; "
                                             "anything else is a 400 `invalid_pagination`."),
            "message_offset": query_parameter("offset", "Messages to skip (with `latest`, counted back from the newest); "
                                               "default 0; a non-negative integer."),
            "message_order": query_parameter("order", f"One of {', '.join(ORDERS)} (any case); `latest` when `limit` is "
                                             "omitted, else `oldest`. The page is chronological either way."),
        },
        "schemas": {
            "MessageList": extended(SESSION_SCHEMAS["MessageList"], {"pagination": {
                "type": "object", "additionalProperties": False, "required": ["limit", "offset", "order", "returned"],
                "properties": {"limit": COUNTER, "offset": COUNTER, "order": {"enum": list(ORDERS)},
                               "returned": COUNTER},
            }}),
        },
        "responses": {
            "MessageList": json_answer("One page of the resolved transcript's active messages, and how it was cut.",
                                       "MessageList"),
            "InvalidPagination": error_answer("`limit` or `offset` is not a non-negative integer, or `order` is not "
                                              "oldest or latest (`invalid_pagination`)."),
        },
    },
)
