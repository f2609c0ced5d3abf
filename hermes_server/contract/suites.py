"""The corpus: every suite of scenarios, in the order `verify` plays them, with its normalisation."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from hermes_server.contract import chat, completions, jobs, probes, runs, sessions
from hermes_server.contract.masks import BodyBytes, Normaliser
from hermes_server.contract.steps import Names, Step


@dataclass(frozen=True)
class Suite:
    """A set of scenarios and the normaliser each side gets for them (fresh per run)."""

    name: str
    title: str
    scenarios: Callable[[Names], list[Step]]
    normaliser: Callable[[], Normaliser]
    oracle_tool: str  # the tool that plays it against upstream 0.19.0


SUITES: tuple[Suite, ...] = (
    Suite("probes", "discovery and the routes newer releases added", probes.scenarios, probes.normaliser,
          "tools/oracle_diff.py"),
    Suite("sessions", "the session resource routes", sessions.scenarios, BodyBytes, "tools/oracle_diff.py"),
    Suite("chat", "session chat, streams and forks", chat.scenarios, chat.normaliser, "tools/oracle_chat_diff.py"),
    Suite("completions", "chat completions", completions.scenarios, completions.normaliser,
          "tools/oracle_completions_diff.py"),
    Suite("jobs", "cron jobs, skills, toolsets, capabilities", jobs.scenarios, jobs.normaliser,
          "tools/oracle_jobs_diff.py"),
    Suite("runs", "structured runs and the Responses API", runs.scenarios, runs.normaliser,
          "tools/oracle_runs_diff.py"),
)
BY_NAME = {suite.name: suite for suite in SUITES}
