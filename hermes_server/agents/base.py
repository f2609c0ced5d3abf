"""The one interface every chat agent implements, and the events it yields.

An agent turns (session id, history, user message, ephemeral instruction) into a
stream of events and one final `TurnResult`. It never touches the database: what
a turn leaves in state.db is decided in one place (`chat/turn.py` with
`store/turns.py`), so every agent leaves the same traces and the same
persistence guarantees hold whichever agent is configured.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from hermes_server.domain.content import UserMessage
from hermes_server.domain.thinking import thinking_text
from hermes_server.domain.usage import Usage

# The system prompt a turn starts from. It is what the session row's
# `system_prompt` is overwritten with when a turn starts on an empty history
# (upstream stores its agent-built prompt there; this is our fixed stand-in).
SYSTEM_PROMPT = (
    "You are Hermes Agent, served by hermes-server (an emulator of the Hermes session API). "
    "Answer the latest user message helpfully and concisely."
)


class ApprovalGate(Protocol):
    """Who decides whether a tool that needs approval may run (a structured run's client)."""

    async def ask(self, request: dict[str, Any]) -> str:
        """Wait for the choice on `request` (command, pattern_key, description, allow_permanent):
        `once`, `session`, `always` or `deny`."""
        ...


@dataclass(frozen=True)
class TurnRequest:
    """Everything an agent may use for one turn."""

    session_id: str
    history: list[dict[str, Any]]
    user_message: UserMessage
    system_message: str | None = None
    # Where a tool that needs approval asks; None: nobody can answer, the tool is blocked.
    approvals: ApprovalGate | None = None


@dataclass(frozen=True)
class Delta:
    """A piece of the assistant's reply text, in order."""

    text: str


@dataclass(frozen=True)
class ToolEvent:
    """A tool run that started, completed or failed (streamed as `tool.<kind>`).

    `call_id` is the id of the tool call the run answers; chat completions shows a
    tool run only when it has one (upstream correlates start and end by it).
    """

    kind: Literal["started", "completed", "failed"]
    tool_name: str | None
    preview: str | None = None
    args: dict[str, Any] | None = None
    call_id: str | None = None
    # What the tool returned (on its completion; the Responses stream shows it).
    result: str | None = None


@dataclass(frozen=True)
class Progress:
    """A model call of the turn ended with text (`domain/thinking.py` says which): the session
    stream shows it as `tool.progress` of the `_thinking` tool, a run as `reasoning.available`.
    Agents yield one after each such call's deltas and before its tool events."""

    text: str


def thinking(content: str | None) -> list[Progress]:
    """The Progress event a model call with `content` yields: none, or one."""
    text = thinking_text(content)
    return [Progress(text)] if text else []


@dataclass(frozen=True)
class TurnResult:
    """The end of a turn.

    `messages` are the assistant and tool messages the turn produced, in
    conversation form (role, content, tool_calls, tool_call_id, tool_name,
    finish_reason, reasoning …), ending with the final assistant message.
    `model` is the model id a real backend reported, if any.
    """

    final_text: str | None
    usage: Usage
    messages: list[dict[str, Any]] = field(default_factory=list)
    model: str | None = None


AgentEvent = Delta | ToolEvent | Progress | TurnResult


class AgentError(Exception):
    """A failure an agent reports on purpose; str() is safe to show (after redaction)."""


class Agent(Protocol):
    """A chat backend."""

    # The model id the session row gets when its `model` is NULL.
    model: str

    def run(self, turn: TurnRequest) -> AsyncIterator[AgentEvent]:
        """Yield events for one turn, ending with exactly one TurnResult (or raise)."""
        ...

    async def aclose(self) -> None:
        """Release connections at shutdown."""
        ...


def assistant_message(text: str | None, finish_reason: str | None = "stop") -> dict[str, Any]:
    """The final assistant message of a turn, shaped as upstream's agent reports it."""
    return {"role": "assistant", "content": text, "finish_reason": finish_reason, "reasoning": None}


def word_deltas(text: str) -> list[str]:
    """Split a reply into streamed pieces: the first word, then each following ` word`."""
    words = text.split(" ")
    return [words[0]] + [" " + word for word in words[1:]] if text else []


def estimated_usage(history_length: int, reply: str | None) -> Usage:
    """Plausible counts: 10 per prompt message (system + history + user), 1 per reply word."""
    return Usage(input_tokens=10 * (history_length + 2), output_tokens=len((reply or "").split()))
