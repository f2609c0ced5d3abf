"""OpenAPI components of test control's routes (`serve --fixture-api`: testing/routes.py and the
inspector); formats in docs/fixtures.md."""

from __future__ import annotations

from hermes_server.openapi.build import Components, json_answer, query_parameter

# Query parameters of GET /_fixture/requests.
JOURNAL_FILTERS = ("journal_route", "journal_method", "journal_session_id", "journal_status", "journal_bodies")

COMPONENTS: Components = {
    "schemas": {
        "FixtureRequest": {"type": "object", "description": "A fixture, fault list, reset or clock document "
                                                           "(docs/fixtures.md)."},
        "FixtureReply": {"type": "object", "required": ["object"], "properties": {"object": {"type": "string"}}},
    },
    "responses": {
        "FixtureReply": json_answer("What the control call did, or the journal, faults or clock.", "FixtureReply"),
        "InspectorFile": {"description": "A file of the inspector page (HTML, JavaScript or CSS); it holds no data.",
                          "content": {"text/html": {"schema": {"type": "string"}}}},
    },
    "parameters": {
        f"journal_{name}": query_parameter(name, description) for name, description in (
            ("route", "Only requests to this route name."),
            ("method", "Only requests with this method."),
            ("session_id", "Only requests naming this session id."),
            ("status", "Only answers with this status."),
            ("bodies", "true: include request and response bodies."),
        )
    },
}
