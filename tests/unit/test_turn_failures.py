"""What a client is told of a failed turn (chat/failures.py): the failure's words when they are meant for
it (the agent's, storage's, 0.19.0's own crash on input it accepted), never a Python internal of the
server's, which is logged with its traceback instead."""

from __future__ import annotations

import logging

import pytest

from hermes_server.agents.base import AgentError
from hermes_server.chat.failures import UNEXPECTED, kind, reported
from hermes_server.domain.errors import StorageFault, UpstreamCrash


def test_meant_failures_keep_their_words_redacted() -> None:
    assert reported(AgentError("Model backend returned HTTP 500: boom")) == "Model backend returned HTTP 500: boom"
    assert "sk-abcdefghijklmnopqrstuvwxyz123456" not in reported(AgentError("bad key sk-abcdefghijklmnopqrstuvwxyz123456"))
    assert reported(StorageFault("database or disk is full", write=True)).startswith("database or disk is full")
    crash = UpstreamCrash("TypeError", 'can only concatenate str (not "int") to str')
    assert reported(crash) == 'can only concatenate str (not "int") to str' and kind(crash) == "TypeError"
    assert kind(AgentError("x")) == "AgentError"


def test_an_internal_of_the_server_is_logged_not_shown(caplog: pytest.LogCaptureFixture) -> None:
    try:
        raise RuntimeError("aclose(): asynchronous generator is already running")
    except RuntimeError as exc:
        with caplog.at_level(logging.ERROR, logger="hermes_server.chat"):
            assert reported(exc) == UNEXPECTED
        assert kind(exc) == "server_error"
    (record,) = caplog.records
    assert record.exc_info is not None and "RuntimeError" in record.getMessage()
