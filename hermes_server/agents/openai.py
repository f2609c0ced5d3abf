"""The `openai` agent: a real OpenAI-compatible chat-completions backend, streamed.

Makes hermes-server a useful local endpoint in front of a local model server
(llama.cpp, vLLM, Ollama, LM Studio …). One streamed `POST {base}/chat/completions`
per turn, no tools offered. Reply deltas are forwarded as they arrive; usage is
mapped from the backend's `usage` chunk (prompt → input, completion → output,
cached prompt tokens → cache_read, reasoning tokens → reasoning); the model id
the backend reports is returned so the session row can record it. Backend
failures (HTTP errors, refused connections, timeouts, malformed streams) become
AgentError with a short message: a 500 on `/chat`, an `error` event on the stream.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import httpx

from hermes_server.agents.base import (
    SYSTEM_PROMPT,
    AgentError,
    AgentEvent,
    Delta,
    TurnRequest,
    TurnResult,
    assistant_message,
    thinking,
)
from hermes_server.domain.usage import Usage

MAX_ERROR_BODY = 2_000
_TIMEOUT = httpx.Timeout(300.0, connect=10.0)
_HISTORY_KEYS = ("role", "content", "tool_calls", "tool_call_id")


def request_messages(turn: TurnRequest) -> list[dict[str, Any]]:
    """System prompt (plus the turn's instruction), the history, then the user message."""
    system = SYSTEM_PROMPT + (f"\n\n{turn.system_message}" if turn.system_message else "")
    history = [{k: m[k] for k in _HISTORY_KEYS if k in m} for m in turn.history]
    return [{"role": "system", "content": system}, *history, {"role": "user", "content": turn.user_message}]


def map_usage(raw: Any) -> Usage:
    """OpenAI usage → our counters (missing or odd values count as 0)."""
    raw = raw if isinstance(raw, dict) else {}

    def num(value: Any) -> int:
        return value if isinstance(value, int) and value >= 0 else 0

    prompt_details = raw.get("prompt_tokens_details") or {}
    completion_details = raw.get("completion_tokens_details") or {}
    return Usage(
        input_tokens=num(raw.get("prompt_tokens")),
        output_tokens=num(raw.get("completion_tokens")),
        cache_read_tokens=num(prompt_details.get("cached_tokens")) if isinstance(prompt_details, dict) else 0,
        reasoning_tokens=num(completion_details.get("reasoning_tokens")) if isinstance(completion_details, dict) else 0,
    )


def _error_detail(body: bytes) -> str:
    text = body[:MAX_ERROR_BODY].decode("utf-8", "replace")
    try:
        error = json.loads(text).get("error")
    except (ValueError, AttributeError):
        return text.strip()
    if isinstance(error, dict) and error.get("message"):
        return str(error["message"])
    return str(error) if error else text.strip()


class OpenAIAgent:
    """See the module docstring."""

    def __init__(self, base_url: str, model: str, api_key: str | None = None) -> None:
        self.url = base_url.rstrip("/") + "/chat/completions"
        self.model = model
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        # trust_env=False: a local backend must not be routed through a proxy from the environment.
        self.client = httpx.AsyncClient(headers=headers, timeout=_TIMEOUT, trust_env=False)

    async def run(self, turn: TurnRequest) -> AsyncIterator[AgentEvent]:
        payload = {
            "model": self.model,
            "messages": request_messages(turn),
            "stream": True,
            "stream_options": {"include_usage": True},
        }
        try:
            async with self.client.stream("POST", self.url, json=payload) as response:
                if response.status_code >= 400:
                    body = await response.aread()
                    raise AgentError(f"Model backend returned HTTP {response.status_code}: {_error_detail(body)}")
                async for event in self._read_stream(response):
                    yield event
        except httpx.TimeoutException:
            raise AgentError(f"Model backend at {self.url} timed out") from None
        except httpx.HTTPError as exc:
            raise AgentError(f"Model backend at {self.url} is unreachable: {exc}") from None

    async def _read_stream(self, response: httpx.Response) -> AsyncIterator[AgentEvent]:
        text: list[str] = []
        reasoning: list[str] = []
        usage = Usage()
        model: str | None = None
        finish = "stop"
        async for line in response.aiter_lines():
            if not line.startswith("data:"):
                continue
            data = line[5:].strip()
            if data == "[DONE]":
                break
            try:
                chunk = json.loads(data)
            except ValueError:
                raise AgentError("Model backend sent an invalid stream chunk") from None
            if not isinstance(chunk, dict):
                raise AgentError("Model backend sent an invalid stream chunk")
            if chunk.get("error"):
                raise AgentError(f"Model backend error: {_error_detail(json.dumps(chunk).encode())}")
            model = chunk.get("model") or model
            if chunk.get("usage"):
                usage = map_usage(chunk["usage"])
            for choice in chunk.get("choices") or []:
                if not isinstance(choice, dict) or not isinstance(choice.get("delta") or {}, dict):
                    continue
                delta = choice.get("delta") or {}
                piece = delta.get("content")
                if isinstance(piece, str) and piece:
                    text.append(piece)
                    yield Delta(piece)
                thought = delta.get("reasoning_content") or delta.get("reasoning")
                if isinstance(thought, str):
                    reasoning.append(thought)
                finish = choice.get("finish_reason") or finish
        reply = "".join(text)
        for event in thinking(reply):  # the call's content, as upstream reports it (not the reasoning)
            yield event
        message = assistant_message(reply, finish)
        if reasoning:
            message["reasoning"] = "".join(reasoning)
        yield TurnResult(reply, usage, [message], model=model)

    async def aclose(self) -> None:
        await self.client.aclose()
