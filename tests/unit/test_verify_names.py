"""verify's report names each drift's operation as docs/api.md does (the document's summaries)."""

from __future__ import annotations

from hermes_server.cli.verify import operation_names
from hermes_server.contract.report import Run


def test_a_step_is_named_by_its_operation_in_docs_api() -> None:
    name = operation_names("0.19.0")
    assert name("POST", "/api/sessions/verify-ab12-se-s1/fork") == "Fork a session"
    assert name("GET", "/api/sessions?limit=1&offset=0") == "List sessions"
    assert name("POST", "/api/sessions/{created}/chat/stream") == "Chat with a session, streamed"
    assert name("PATCH", "/api/sessions/x") == "Update a session"
    assert name("GET", "/no/such/route") is None
    api = open("docs/api.md", encoding="utf-8").read()
    assert "### Fork a session" in api and "### List sessions" in api


def test_a_newer_profile_names_its_own_operations() -> None:
    assert operation_names("0.19.0")("POST", "/v1/runs/r1/steer") is None
    assert operation_names("0.21.2")("POST", "/v1/runs/r1/steer") == "Steer a run"


def test_the_report_puts_the_name_before_the_behaviour() -> None:
    class Step:
        method, path, behaviour = "DELETE", "/api/sessions/x", "a delete of a forked parent"

    class Finding:
        step = Step()

    run = Run.__new__(Run)
    run.operation = operation_names("0.19.0")
    assert run.behaviour(Finding()) == "Delete a session: a delete of a forked parent"  # type: ignore[arg-type]
