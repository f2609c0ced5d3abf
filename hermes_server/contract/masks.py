"""Normalisation: what two correct servers may legitimately answer differently, masked.

Generated ids (numbered by first appearance on each side), clocks, token counts and the
agent's words (`MOCK-REPLY …` of upstream's mock model, `ECHO-REPLY …` of hermes-server's echo
agent, `TOOL-DONE …` of the scripted tool turn) become placeholders; streams become their
event sequence, a run of text deltas counting as one. Each suite chooses its masks: the
session routes compare body bytes (key order, escaping, separators), the others JSON
structure. One normaliser per side and per suite run: the id numbering is its state.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import Any

from hermes_server.contract.wire import Answer

# Present on every answer of both servers' JSON routes; compared as present or not.
SECURITY_HEADER = "x-content-type-options"
SSE_HEADERS = ("cache-control", "x-accel-buffering")
SESSION_HEADERS = ("x-hermes-session-id", "x-hermes-session-key")
REPLY = re.compile(r"^(MOCK-REPLY to:|ECHO-REPLY to:|TOOL-DONE:)")
_SEEN = re.compile(r" \[n=\d+\]$")
_COMPLETION_ID = re.compile(r"chatcmpl-[0-9a-f]{29}")
_ISO = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?[+-]\d{2}:\d{2}$")
_REPLY_DELTA = re.compile(r"^(MOCK|ECHO)-REPLY to:.*")

# Generated ids, by kind.
GEN = ("gen", re.compile(r"api_\d{6,12}_[0-9a-f]{8}"))
CONT = ("cont", re.compile(r"\d{8}_\d{6}_[0-9a-f]{6}"))
RUN = ("run", re.compile(r"run_[0-9a-f]{32}"))
MSG = ("msg", re.compile(r"msg_[0-9a-f]{32}"))
JOB = ("job", re.compile(r"^[0-9a-f]{12}$"))
RESP = ("resp", re.compile(r"resp_[0-9a-f]{28}"))
OUTPUT_MSG = ("msg", re.compile(r"msg_[0-9a-f]{24}"))
CALL = ("fc", re.compile(r"fco?_[0-9a-f]{24}"))
UUID = ("uuid", re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}"))


@dataclass(frozen=True)
class Masks:
    """Which values a suite masks inside JSON (see `Values`)."""

    timestamps: frozenset[str]
    counters: frozenset[str]
    ids: tuple[tuple[str, re.Pattern[str]], ...] = ()
    seen: bool = False  # keep a reply's `[n=K]`: how many messages the model saw is compared
    completion_ids: bool = False  # `chatcmpl-…` ids: their shape is checked, the value masked
    reply_deltas: bool = False  # a `delta` starting with a reply keeps what follows its first line
    iso: bool = False  # ISO-8601 date-times
    row_ids: bool = False  # integer `id`s (message rows: each side keeps its own database)


class Values:
    """The JSON walker of one side: masks values, numbers generated ids in order of appearance."""

    def __init__(self, masks: Masks) -> None:
        self.masks = masks
        self.ids: dict[str, str] = {}

    def __call__(self, key: str | None, value: Any) -> Any:
        m = self.masks
        if isinstance(value, dict):
            return {k: self(k, v) for k, v in value.items()}
        if isinstance(value, list):
            return [self(None, v) for v in value]
        if m.completion_ids and key == "id" and isinstance(value, str) and value.startswith("chatcmpl-"):
            return "<chatcmpl>" if _COMPLETION_ID.fullmatch(value) else f"<bad id {value}>"
        if m.reply_deltas and key == "delta" and isinstance(value, str):
            return _REPLY_DELTA.sub("<reply>", value)
        if key in m.timestamps and isinstance(value, (int, float)) and not isinstance(value, bool):
            return "<ts>"
        if key in m.counters and isinstance(value, int):
            return "<n>"
        if isinstance(value, str) and REPLY.match(value):
            seen = _SEEN.search(value) if m.seen else None
            return f"<reply{seen.group(0) if seen else ''}>"
        if m.row_ids and key == "id" and isinstance(value, int) and not isinstance(value, bool):
            return "<row>"
        if key == "model" and value == "mock-model":  # upstream's agent records its model after a call
            return "hermes-agent"
        if isinstance(value, str):
            if m.iso and _ISO.match(value):
                return "<iso>"
            for kind, pattern in m.ids:
                value = pattern.sub(partial(self._numbered, kind), value)
        return value

    def _numbered(self, kind: str, found: re.Match[str]) -> str:
        return self.ids.setdefault(found.group(0), f"<{kind}-{len(self.ids) + 1}>")


def _as_it_is(key: str | None, value: Any) -> Any:
    return value


def decoded_body(body: bytes, mask: Callable[[str | None, Any], Any] = _as_it_is) -> Any:
    """A JSON body passed through `mask(None, value)`; any other body as its text."""
    try:
        parsed = json.loads(body)
    except ValueError:
        return body.decode("utf-8", "replace")
    return mask(None, parsed)


def parsed_form(form: Any) -> Any:
    """A form whose body is kept as JSON text (the session routes' bytes) with that body parsed, for
    reading which fields differ; any other form as it is."""
    if isinstance(form, dict) and isinstance(form.get("body"), str):
        try:
            return {**form, "body": json.loads(form["body"])}
        except ValueError:
            return form
    return form


def blocks(body: bytes, encoding: str = "utf-8") -> list[str]:
    """The SSE blocks of a stream body (what follows the last blank line is cut off)."""
    return body.decode(encoding).split("\n\n")[:-1]


class Normaliser:
    """One side's comparable form of each answer of a suite; `tally` counts what a suite reports."""

    def __init__(self) -> None:
        self.tally: Counter[str] = Counter()

    def __call__(self, answer: Answer) -> dict[str, Any]:
        raise NotImplementedError


class BodyBytes(Normaliser):
    """The session routes: status, Content-Type, Allow, security headers, and the body bytes with
    timestamps and generated `api_…` ids substituted (so key order and escaping count)."""

    TIMESTAMPS = ("started_at", "ended_at", "last_active", "timestamp", "created")
    _TS = re.compile(r'"(' + "|".join(TIMESTAMPS) + r')": -?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?')

    def __init__(self) -> None:
        super().__init__()
        self.generated: dict[str, str] = {}

    def __call__(self, answer: Answer) -> dict[str, Any]:
        text = answer.body.decode("utf-8", "replace")
        text = self._TS.sub(lambda m: f'"{m.group(1)}": "<ts>"', text)
        text = GEN[1].sub(lambda m: self.generated.setdefault(m.group(0), f"<gen-{len(self.generated) + 1}>"), text)
        return {"status": answer.status, "content-type": answer.headers.get("content-type", ""),
                "allow": answer.headers.get("allow"), "secure": SECURITY_HEADER in answer.headers, "body": text}


class Structured(Normaliser):
    """JSON bodies through `Values`, streams through the suite's `events`, and the headers it compares:
    `raw` as they are, `masked` through `Values` (session ids), SSE headers on streams only."""

    raw: tuple[str, ...] = ("content-type",)
    masked: tuple[str, ...] = ()
    sse_headers = True
    stream_key = "events"

    def __init__(self, masks: Masks) -> None:
        super().__init__()
        self.value = Values(masks)

    def events(self, body: bytes) -> list[Any]:
        raise NotImplementedError

    def __call__(self, answer: Answer) -> dict[str, Any]:
        shape: dict[str, Any] = {"status": answer.status, "secure": SECURITY_HEADER in answer.headers}
        shape.update({h: answer.headers.get(h) for h in self.raw})
        shape.update({h: self.value(None, answer.headers.get(h)) for h in self.masked})
        if answer.headers.get("content-type") == "text/event-stream":
            if self.sse_headers:
                shape.update({h: answer.headers.get(h) for h in SSE_HEADERS})
            shape[self.stream_key] = self.events(answer.body)
        else:
            shape["body"] = decoded_body(answer.body, self.value)
        return shape


class SessionChat(Structured):
    """The session chat routes: `event:`/`data:` frames, `seq` checked (1, 2, …) then masked."""

    masked = SESSION_HEADERS

    def events(self, body: bytes) -> list[Any]:
        out: list[Any] = []
        numbered = 0
        for block in blocks(body):
            if block.startswith(":"):
                out.append(("comment", block))
                continue
            name_line, data_line = block.split("\n")
            name, data = name_line[len("event: "):], json.loads(data_line[len("data: "):])
            numbered += 1
            data["seq"] = "<seq>" if data.get("seq") == numbered else f"<out of order: {data.get('seq')}>"
            if name == "tool.progress" and data.get("tool_name") == "_thinking":
                self.tally["_thinking"] += 1
            if name == "assistant.delta":
                data["delta"] = "<delta>"
                if out and out[-1][0] == "assistant.delta+":
                    continue
                name = "assistant.delta+"
            out.append((name, list(data), self.value(None, data)))
        return out


class Completions(Structured):
    """`POST /v1/chat/completions`: `data:` chunks, consecutive content chunks as one `content+`."""

    raw = ("content-type", "cache-control", "x-accel-buffering", "allow", "x-hermes-session-id",
           "x-hermes-session-key", "x-hermes-completed", "x-hermes-partial")
    sse_headers = False
    stream_key = "stream"

    def events(self, body: bytes) -> list[Any]:
        out: list[Any] = []
        for block in blocks(body):
            if block.startswith(":"):
                out.append(("comment", block))
            elif block == "data: [DONE]":
                out.append(("done",))
            elif block.startswith("data: "):
                chunk = json.loads(block[len("data: "):])
                delta = chunk.get("choices", [{}])[0].get("delta", {})
                if "content" in delta and chunk["choices"][0].get("finish_reason") is None:
                    delta["content"] = "<content>"
                    if out and out[-1][0] == "content+":
                        continue
                    out.append(("content+", list(chunk), self.value(None, chunk)))
                else:
                    out.append(("chunk", list(chunk), self.value(None, chunk)))
            else:
                out.append(("other", block))
        return out


class Jobs(Structured):
    """The jobs, catalogue and cron routes: session streams without comments or `seq`, a chat
    completions stream as its frames only."""

    raw = ("content-type", "allow")
    sse_headers = False

    def events(self, body: bytes) -> list[Any]:
        out: list[Any] = []
        for block in blocks(body):
            if block.startswith(":"):
                continue
            if block.startswith("data: "):  # chat completions: `data:` frames only
                out.append(("data", [], "[DONE]" if block == "data: [DONE]" else "<chunk>"))
                continue
            name_line, data_line = block.split("\n")
            name, data = name_line[len("event: "):], json.loads(data_line[len("data: "):])
            data.pop("seq", None)
            if name == "assistant.delta":
                data["delta"] = "<delta>"
                if out and out[-1][0] == name:
                    continue
            out.append((name, list(data), self.value(None, data)))
        return out


class Runs(Structured):
    """Structured runs (`data:` frames naming their event) and the Responses API (`event:` and
    `data:`): `sequence_number` masked, a run of text deltas as one."""

    raw = ("content-type", "retry-after")
    masked = SESSION_HEADERS

    def events(self, body: bytes) -> list[Any]:
        out: list[Any] = []
        for block in blocks(body, "ascii"):
            if block.startswith(":"):
                out.append(("comment", block))
                continue
            lines = block.split("\n")
            data = json.loads(lines[-1][len("data: "):])
            name = lines[0][len("event: "):] if len(lines) == 2 else data.get("event")
            if name == "reasoning.available":
                self.tally["reasoning.available"] += 1
            if "sequence_number" in data:
                data["sequence_number"] = "<seq>"
            if name in ("message.delta", "response.output_text.delta"):
                data["delta"] = "<delta>"
                if out and out[-1][0] == f"{name}+":
                    continue
                name = f"{name}+"
            out.append((name, list(data), self.value(None, data)))
        return out


class _Anything:
    """A shape that matches any other (an empty list, a null): what one server holds and the other
    does not is not the contract."""

    def __eq__(self, other: object) -> bool:
        return True

    def __hash__(self) -> int:
        return 0

    def __repr__(self) -> str:
        return "<any>"


ANYTHING = _Anything()


class Keys(tuple[str, ...]):
    """The keys of a listed object, in order: the shape of one item of a listing."""

    __slots__ = ()


def json_shape(value: Any, depth: int = -1) -> Any:
    """A JSON value as its shape: objects keep their keys in order, each value its type (below
    `depth` levels an object is just an object); a list is the set of its items' shapes (objects by
    their keys alone), an empty list or a null anything."""
    if isinstance(value, dict):
        if depth == 0:
            return "object"
        return {key: json_shape(item, depth - 1) for key, item in value.items()}
    if isinstance(value, list):
        if not value:
            return ANYTHING
        return ("list", frozenset(Keys(item) if isinstance(item, dict) else type(item).__name__ for item in value))
    if value is None:
        return ANYTHING
    return "number" if isinstance(value, (int, float)) and not isinstance(value, bool) else type(value).__name__


def by_shape(form: dict[str, Any], answer: Answer, depth: int = -1) -> dict[str, Any]:
    """`form` with its body as the body's shape, `depth` levels deep (a body that is not JSON stays)."""
    try:
        body = json.loads(answer.body)
    except ValueError:
        return form
    return {**form, "body": json_shape(body, depth)}
