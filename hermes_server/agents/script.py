"""The `script` agent: replies, tool runs, reasoning, delays and failures read from a JSON file.

So a connector test can reproduce what a real agent does (tool events, slow
turns, stalls that trigger keepalives, agent errors) without a model. The file
is re-read on every turn, so a test may rewrite it between turns. Format:

    {"turns": [
      {"match": "slow",                       # optional: substring of the user text
       "steps": [                             # optional, run in order
         {"delta": "Hel"},                    # streamed reply text
         {"sleep": 1.5},                      # pause (seconds)
         {"reasoning": "thinking"},           # model reasoning: stored on the reply, no event
         {"tool": "search", "args": {"q": "x"}, "preview": "search x",
          "result": "3 hits", "failed": false},  # tool.started then tool.completed/failed,
                                              # persisted as an assistant tool call + tool row
         {"tool": "terminal", "args": {"command": "rm -rf build"},
          "approval": {"pattern_key": "recursive delete",   # the tool asks for approval first:
                       "description": "recursive delete",   # optional, default pattern_key
                       "command": "rm -rf build",           # optional, default args.command
                       "allow_permanent": true},            # optional, default true
          "result": "removed"},               # once/session/always: it runs; deny (or no one
                                              # to ask: every route but /v1/runs): it fails,
                                              # its result says it was blocked
         {"fail": "backend exploded"}         # the agent raises (500 / `error` event)
       ],
       "reply": "final text",                 # optional; null = no final response;
                                              # absent = the deltas joined
       "usage": {"input_tokens": 5, "output_tokens": 7}}  # optional
    ]}

The first entry whose `match` occurs in the user text (or that has no `match`)
plays the turn. A bare list is accepted in place of `{"turns": [...]}`.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hermes_server.agents.base import (
    AgentError,
    AgentEvent,
    Delta,
    ToolEvent,
    TurnRequest,
    TurnResult,
    assistant_message,
    estimated_usage,
    thinking,
    word_deltas,
)
from hermes_server.domain.content import message_text
from hermes_server.domain.usage import Usage

_STEP_KINDS = ("delta", "sleep", "reasoning", "tool", "fail")
_USAGE_FIELDS = ("input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens", "reasoning_tokens")
_UNSET = object()


@dataclass(frozen=True)
class ScriptTurn:
    """One scripted turn."""

    match: str | None
    steps: list[dict[str, Any]]
    reply: Any  # str, None, or _UNSET
    usage: dict[str, int] | None


def _step(raw: Any, where: str) -> dict[str, Any]:
    if not isinstance(raw, dict):
        raise ValueError(f"{where}: a step must be an object")
    kinds = [kind for kind in _STEP_KINDS if kind in raw]
    if len(kinds) != 1:
        raise ValueError(f"{where}: a step needs exactly one of {', '.join(_STEP_KINDS)}")
    kind = kinds[0]
    if kind == "sleep" and (not isinstance(raw["sleep"], (int, float)) or raw["sleep"] < 0):
        raise ValueError(f"{where}: sleep must be a non-negative number of seconds")
    if kind in ("delta", "reasoning", "fail", "tool") and not isinstance(raw[kind], str):
        raise ValueError(f"{where}: {kind} must be a string")
    if kind == "tool" and not isinstance(raw.get("args", {}), dict):
        raise ValueError(f"{where}: tool args must be an object")
    approval = raw.get("approval")
    if approval is not None and (kind != "tool" or not isinstance(approval, dict)
                                 or not isinstance(approval.get("pattern_key", ""), str)):
        raise ValueError(f"{where}: approval is an object on a tool step (pattern_key a string)")
    return raw


def parse_script(data: Any) -> list[ScriptTurn]:
    """Validate a decoded script; ValueError names the first problem."""
    entries = data.get("turns") if isinstance(data, dict) else data
    if not isinstance(entries, list) or not entries:
        raise ValueError("a script is a non-empty list of turns (or {\"turns\": [...]})")
    turns = []
    for i, entry in enumerate(entries):
        where = f"turn {i}"
        if not isinstance(entry, dict):
            raise ValueError(f"{where}: must be an object")
        match = entry.get("match")
        if match is not None and not isinstance(match, str):
            raise ValueError(f"{where}: match must be a string")
        steps = entry.get("steps", [])
        if not isinstance(steps, list):
            raise ValueError(f"{where}: steps must be a list")
        reply = entry.get("reply", _UNSET)
        if reply is not _UNSET and reply is not None and not isinstance(reply, str):
            raise ValueError(f"{where}: reply must be a string or null")
        usage = entry.get("usage")
        if usage is not None and (
            not isinstance(usage, dict)
            or any(k not in _USAGE_FIELDS or not isinstance(v, int) for k, v in usage.items())
        ):
            raise ValueError(f"{where}: usage takes integer {', '.join(_USAGE_FIELDS)}")
        turns.append(ScriptTurn(match, [_step(s, f"{where} step {j}") for j, s in enumerate(steps)], reply, usage))
    return turns


def load_script(path: Path) -> list[ScriptTurn]:
    """Read and validate a script file; ValueError says what is wrong with it."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ValueError(f"cannot read agent script {path}: {exc}") from None
    try:
        return parse_script(data)
    except ValueError as exc:
        raise ValueError(f"invalid agent script {path}: {exc}") from None


# The tool result of a command the user refused.
BLOCKED_RESULT = json.dumps({"output": "", "exit_code": -1, "status": "blocked",
                             "error": "BLOCKED: the user denied this command; do not retry it."})


def approval_request(step: dict[str, Any]) -> dict[str, Any]:
    """What a tool step's approval asks, in upstream's key order."""
    approval = step["approval"]
    pattern = approval.get("pattern_key") or "dangerous command"
    return {
        "command": approval.get("command", step.get("args", {}).get("command", step.get("preview"))),
        "pattern_key": pattern,
        "pattern_keys": [pattern],
        "description": approval.get("description", pattern),
        "allow_permanent": approval.get("allow_permanent", True) is not False,
    }


def _tool_messages(step: dict[str, Any], call_id: str, result: str) -> list[dict[str, Any]]:
    """The assistant tool call and the tool result, as a real turn persists them."""
    call = {
        "id": call_id,
        "type": "function",
        "function": {"name": step["tool"], "arguments": json.dumps(step.get("args", {}))},
    }
    return [
        {"role": "assistant", "content": None, "tool_calls": [call], "finish_reason": "tool_calls"},
        {"role": "tool", "content": result, "tool_call_id": call_id, "tool_name": step["tool"]},
    ]


class ScriptAgent:
    """See the module docstring."""

    def __init__(self, path: Path, model: str) -> None:
        self.path = path
        self.model = model
        load_script(path)  # fail at startup, not on the first chat

    def _pick(self, turn: TurnRequest) -> ScriptTurn:
        try:
            turns = load_script(self.path)
        except ValueError as exc:
            raise AgentError(str(exc)) from None
        text = message_text(turn.user_message)
        for scripted in turns:
            if scripted.match is None or scripted.match in text:
                return scripted
        raise AgentError("no scripted turn matches this message")

    async def run(self, turn: TurnRequest) -> AsyncIterator[AgentEvent]:
        scripted = self._pick(turn)
        messages: list[dict[str, Any]] = []
        streamed: list[str] = []
        # Text streamed since the last tool step: the content of that step's model call.
        call_text: list[str] = []
        reasoning: list[str] = []
        for step in scripted.steps:
            if "delta" in step:
                streamed.append(step["delta"])
                call_text.append(step["delta"])
                yield Delta(step["delta"])
            elif "sleep" in step:
                await asyncio.sleep(step["sleep"])
            elif "reasoning" in step:
                reasoning.append(step["reasoning"])
            elif "fail" in step:
                raise AgentError(step["fail"])
            else:
                for event in thinking("".join(call_text)):
                    yield event
                call_text = []
                call_id = f"call_{len(messages) // 2 + 1}"
                yield ToolEvent("started", step["tool"], step.get("preview"), step.get("args", {}), call_id)
                failed, result = bool(step.get("failed")), str(step.get("result", ""))
                if "approval" in step:
                    choice = await turn.approvals.ask(approval_request(step)) if turn.approvals else "deny"
                    if choice == "deny":
                        failed, result = True, BLOCKED_RESULT
                messages += _tool_messages(step, call_id, result)
                yield ToolEvent("failed" if failed else "completed", step["tool"], call_id=call_id, result=result)
        reply = "".join(streamed) if scripted.reply is _UNSET else scripted.reply
        if not streamed and reply:
            for piece in word_deltas(reply):
                yield Delta(piece)
        for event in thinking(reply):  # the final model call's content is the reply
            yield event
        usage = Usage(**scripted.usage) if scripted.usage else estimated_usage(len(turn.history), reply)
        final = assistant_message(reply)
        if reasoning:
            final["reasoning"] = "".join(reasoning)
        yield TurnResult(reply, usage, messages + [final])

    async def aclose(self) -> None:
        return None
