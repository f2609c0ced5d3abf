"""The rules of `POST /v1/chat/completions` input: the `messages` array, the session it lands in.

Pure functions. OpenAI-style clients send the whole conversation on every call;
upstream 0.19.0 reads it like this:

- `system` messages are flattened to text (images dropped) and joined with
  newlines into the turn's ephemeral instruction, which is never stored;
- `user` and `assistant` messages are normalised exactly as session chat
  normalises its `message` (text, or text/image parts), and a bad content part
  is a 400 naming `messages[i].content`; other roles are ignored;
- the LAST of those user/assistant messages is the turn (even when it is an
  assistant message), the ones before it are the model's history;
- without `X-Hermes-Session-Id`, the turn is stored in a session whose id is
  derived from the instruction and the first user message (both stay the same
  across the turns of one client conversation), so a client that resends the
  whole conversation keeps writing to one session.

Where 0.19.0 crashes with a bare 500 (a body that is not an object, a message
that is not an object, an unhashable role), we answer a 400 naming the field
(docs/differences.md, D6).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Any

from hermes_server.domain.content import (
    MAX_CONTENT_PARTS,
    MAX_TEXT_LENGTH,
    TEXT_TYPES,
    ContentError,
    UserMessage,
    has_visible_payload,
    normalize_content,
)
from hermes_server.domain.ids import MAX_SESSION_ID_LENGTH, has_cr_lf_nul, is_path_unsafe
from hermes_server.domain.titles import has_lone_surrogate, scrub_surrogates

CONVERSATION_ROLES = frozenset({"user", "assistant"})
# How deep nested lists in a system message's content are followed.
MAX_FLATTEN_DEPTH = 10

_TRUE_STRINGS = frozenset({"1", "true", "yes", "on"})
_FALSE_STRINGS = frozenset({"0", "false", "no", "off"})

MISSING_MESSAGES = "Missing or invalid 'messages' field"
NO_USER_MESSAGE = "No user message found in messages"


class MessagesError(ValueError):
    """A request the endpoint refuses with 400.

    `bare` marks upstream's two-field envelope (`message` and `type` only), which
    it uses for the messages-array and session-header errors; the others carry
    `param` and `code`.
    """

    def __init__(self, message: str, code: str | None = None, param: str | None = None, *, bare: bool = False,
                 upstream_crashes: bool = False) -> None:
        super().__init__(message)
        self.message = message
        self.code = code
        self.param = param
        self.bare = bare
        # D6: 0.19.0 answers this input with its bare 500 (kept under --upstream-quirks).
        self.upstream_crashes = upstream_crashes


@dataclass(frozen=True)
class Conversation:
    """A validated `messages` array."""

    # The joined system text; None when the array has no system message ("" is possible).
    system: str | None
    # The user/assistant messages, normalised, in order; the last one is the turn.
    turns: list[dict[str, Any]]

    @property
    def user_message(self) -> UserMessage:
        content: UserMessage = self.turns[-1]["content"]  # normalised to text or parts by the validation
        return content

    @property
    def history(self) -> list[dict[str, Any]]:
        """What the model sees before the turn when the session is not continued by header."""
        return self.turns[:-1]

    @property
    def instruction(self) -> str | None:
        """The ephemeral instruction of the turn: None when there is no system text."""
        return self.system or None

    def first_user_content(self) -> UserMessage:
        return next((m["content"] for m in self.turns if m["role"] == "user"), "")


def flatten_text(content: Any, depth: int = 0) -> str:
    """A system message's content as plain text, as upstream flattens it.

    Strings are kept; in a list, non-empty strings and the text of text parts are
    joined by newlines, nested lists are followed (at most 10 deep), image and
    other parts are dropped; any other value is `str()`-ed. Every piece and the
    result are cut at 65,536 characters, and a list stops being read once that
    much text has been collected (or after 1,000 items).
    """
    if depth > MAX_FLATTEN_DEPTH or content is None:
        return ""
    if isinstance(content, str):
        return scrub_surrogates(content[:MAX_TEXT_LENGTH])
    if not isinstance(content, list):
        return scrub_surrogates(str(content)[:MAX_TEXT_LENGTH])
    parts: list[str] = []
    total = 0
    for item in content[:MAX_CONTENT_PARTS]:
        piece = ""
        if isinstance(item, str):
            piece = item[:MAX_TEXT_LENGTH]
        elif isinstance(item, dict):
            if str(item.get("type") or "").strip().lower() in TEXT_TYPES and item.get("text"):
                piece = str(item["text"])[:MAX_TEXT_LENGTH]
        elif isinstance(item, list):
            piece = flatten_text(item, depth + 1)
        if piece:
            parts.append(piece)
            total += len(piece)
        if total >= MAX_TEXT_LENGTH:
            break
    return scrub_surrogates("\n".join(parts)[:MAX_TEXT_LENGTH])


def _role(message: dict[str, Any], index: int) -> Any:
    role = message.get("role", "")
    try:
        hash(role)
    except TypeError:
        # 0.19.0 crashes testing an unhashable role against its role set (D6).
        raise MessagesError("Invalid message role", param=f"messages[{index}].role", upstream_crashes=True) from None
    return role


def parse_messages(body: dict[str, Any]) -> Conversation:
    """Validate `body["messages"]` in upstream's order; the first problem found is raised.

    Every message is checked before the turn is looked for, so a bad content part
    anywhere wins over a missing user message.
    """
    messages = body.get("messages")
    if not messages or not isinstance(messages, list):
        raise MessagesError(MISSING_MESSAGES, bare=True)
    system: str | None = None
    turns: list[dict[str, Any]] = []
    for index, message in enumerate(messages):
        if not isinstance(message, dict):
            raise MessagesError("Each message must be an object", param=f"messages[{index}]", upstream_crashes=True)
        role = _role(message, index)
        raw = message.get("content", "")
        if role == "system":
            text = flatten_text(raw)
            system = text if system is None else f"{system}\n{text}"
        elif role in CONVERSATION_ROLES:
            try:
                content = normalize_content(raw)
            except ContentError as exc:
                raise MessagesError(exc.message, exc.code, f"messages[{index}].content") from None
            turns.append({"role": role, "content": content})
    if not turns or not has_visible_payload(turns[-1]["content"]):
        raise MessagesError(NO_USER_MESSAGE, bare=True)
    return Conversation(system, turns)


def derived_session_id(conversation: Conversation) -> str:
    """`api-<16 hex>`: a hash of the system text and the first user message.

    A multimodal first message takes part as Python's `str()` of its parts list,
    as upstream formats it, so the ids agree with upstream's for the same request.
    """
    seed = f"{conversation.system or ''}\n{conversation.first_user_content()}"
    return "api-" + hashlib.sha256(seed.encode("utf-8")).hexdigest()[:16]


def continued_session_id(raw: str) -> str | None:
    """The session an `X-Hermes-Session-Id` value continues, or None when blank.

    Raises for CR/LF/NUL, path-like ids and more than 256 characters (in that
    order). A value that was not valid UTF-8 is refused like a path-like one: it
    cannot be stored as an id.
    """
    value = raw.strip()
    if not value:
        return None
    if has_lone_surrogate(value) or has_cr_lf_nul(value) or is_path_unsafe(value):
        raise MessagesError("Invalid session ID", bare=True)
    if len(value) > MAX_SESSION_ID_LENGTH:
        raise MessagesError("Session ID too long", bare=True)
    return value


def request_bool(value: Any, default: bool = False) -> bool:
    """A boolean-like body field (`stream`): real booleans, numbers, and yes/no words."""
    if isinstance(value, bool):
        return value
    if isinstance(value, str):
        word = value.strip().lower()
        if word in _TRUE_STRINGS:
            return True
        if word in _FALSE_STRINGS:
            return False
        return default
    if isinstance(value, (int, float)):
        return bool(value)
    return default


def request_fingerprint(body: dict[str, Any]) -> str:
    """What must match for an `Idempotency-Key` replay: model, messages, tools, tool_choice, stream."""
    subset = {key: body.get(key) for key in ("model", "messages", "tools", "tool_choice", "stream")}
    return hashlib.sha256(repr(subset).encode("utf-8", "surrogatepass")).hexdigest()
