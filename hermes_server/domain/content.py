"""Chat input rules and the conversation form of stored history.

Pure functions, shared by `/chat` and `/chat/stream`; `/v1/chat/completions` normalises each
message's content with the same rules (domain/openai_messages.py). Errors are `ContentError`s
carrying the code, message and `param` that upstream answers with; the route turns them into 400s.
Python semantics (truthiness, `str()`, `repr()`) are part of the contract: clients
send odd JSON values and upstream's answers depend on exactly these conversions.
"""

from __future__ import annotations

import re
from typing import Any

from hermes_server.domain.titles import scrub_surrogates

MAX_TEXT_LENGTH = 65_536
MAX_CONTENT_PARTS = 1_000

TEXT_TYPES = frozenset({"text", "input_text", "output_text"})
IMAGE_TYPES = frozenset({"image_url", "input_image"})
FILE_TYPES = frozenset({"file", "input_file"})

# The placeholder a stored user row carries for each image of a multimodal message.
IMAGE_PLACEHOLDER = "[screenshot]"

_MISSING_MESSAGE = "Missing 'message' field"
_FILE_PARTS = (
    "Inline image inputs are supported, but uploaded files and document inputs are not "
    "supported on this endpoint."
)
_EMPTY_URL = "Image parts must include a non-empty image URL."
_NON_IMAGE_DATA = "Only image data URLs are supported. Non-image data payloads are not supported."
_BAD_SCHEME = "Image inputs must use http(s) URLs or data:image/... URLs."
_BAD_DETAIL = "Image detail must be a non-empty string when provided."

UserMessage = str | list[dict[str, Any]]


class ContentError(ValueError):
    """A chat body the API refuses with 400; `param` is "message" for content-part errors."""

    def __init__(self, code: str, message: str, param: str | None = "message") -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.param = param


def _part_type(part: dict[str, Any]) -> str:
    return str(part.get("type") or "").strip().lower()


def has_visible_payload(raw: Any) -> bool:
    """A non-blank string, or a list with a non-blank text part or any image part.

    Bare strings inside a list do not count, and the whole list is scanned
    (also beyond the first 1,000 items that normalisation looks at).
    """
    if isinstance(raw, str):
        return bool(raw.strip())
    if not isinstance(raw, list):
        return False
    for part in raw:
        if not isinstance(part, dict):
            continue
        kind = _part_type(part)
        if kind in TEXT_TYPES and str(part.get("text") or "").strip():
            return True
        if kind in IMAGE_TYPES:
            return True
    return False


def _image_part(part: dict[str, Any]) -> dict[str, Any]:
    detail = part.get("detail")
    ref = part.get("image_url")
    if isinstance(ref, dict):
        url = ref.get("url")
        detail = ref.get("detail", detail)
    else:
        url = ref
    if not isinstance(url, str) or not url.strip():
        raise ContentError("invalid_image_url", _EMPTY_URL)
    url = url.strip()
    lowered = url.lower()
    if lowered.startswith("data:"):
        if not lowered.startswith("data:image/") or "," not in url:
            raise ContentError("unsupported_content_type", _NON_IMAGE_DATA)
    elif not lowered.startswith(("http://", "https://")):
        raise ContentError("invalid_image_url", _BAD_SCHEME)
    image: dict[str, Any] = {"url": scrub_surrogates(url)}
    if detail is not None:
        if not isinstance(detail, str) or not detail.strip():
            raise ContentError("invalid_content_part", _BAD_DETAIL)
        image["detail"] = scrub_surrogates(detail.strip())
    return {"type": "image_url", "image_url": image}


def _text_part(text: str) -> dict[str, Any]:
    return {"type": "text", "text": scrub_surrogates(text[:MAX_TEXT_LENGTH])}


def normalize_content(raw: Any) -> UserMessage:
    """The canonical user message: a string, or text/image parts when an image is present.

    Strings are cut to 65,536 characters; of a list only the first 1,000 items are
    examined (later ones are neither used nor validated). Lone surrogates become
    U+FFFD, as upstream's writers store them (D6).
    """
    if raw is None:
        return ""
    if isinstance(raw, str):
        return scrub_surrogates(raw[:MAX_TEXT_LENGTH])
    if not isinstance(raw, list):
        return scrub_surrogates(str(raw)[:MAX_TEXT_LENGTH])
    parts: list[dict[str, Any]] = []
    for part in raw[:MAX_CONTENT_PARTS]:
        if isinstance(part, str):
            if part:
                parts.append(_text_part(part))
            continue
        if not isinstance(part, dict):
            continue
        kind = _part_type(part)
        if kind in TEXT_TYPES:
            text = part.get("text")
            if text is not None and str(text):
                parts.append(_text_part(str(text)))
        elif kind in IMAGE_TYPES:
            parts.append(_image_part(part))
        elif kind in FILE_TYPES:
            raise ContentError("unsupported_content_type", _FILE_PARTS)
        else:
            raise ContentError(
                "unsupported_content_type",
                f"Unsupported content part type {part.get('type')!r}. "
                "Only text and image_url/input_image parts are supported.",
            )
    if not parts:
        return ""
    if all(p["type"] == "text" for p in parts):
        return "\n".join(p["text"] for p in parts)
    return parts


def extract_user_message(body: dict[str, Any]) -> UserMessage:
    """`message` if truthy, else `input`; must be visible, then normalised."""
    raw = body.get("message") or body.get("input")
    if not has_visible_payload(raw):
        raise ContentError("missing_message", _MISSING_MESSAGE, param=None)
    return normalize_content(raw)


def system_instruction(body: dict[str, Any]) -> str | None:
    """The ephemeral instruction: truthy `system_message`, else `instructions`.

    A non-string value is refused with the `system_message` wording even when it
    came from `instructions`; an empty string means no instruction.
    """
    value = body.get("system_message") or body.get("instructions")
    if value is not None and not isinstance(value, str):
        raise ContentError("invalid_system_message", "system_message must be a string", param=None)
    return scrub_surrogates(value) if value else None


def stored_user_content(message: UserMessage) -> str | None:
    """What the user row stores: the text, or text parts and `[screenshot]` per image, one per line."""
    if isinstance(message, str):
        return message
    lines = [
        str(part.get("text", "")) if part.get("type") == "text" else IMAGE_PLACEHOLDER
        for part in message
        if part.get("type") in ("text", "image_url")
    ]
    return "\n".join(lines) if lines else None


def message_text(message: UserMessage) -> str:
    """Only the text of a user message (image parts skipped), joined by spaces."""
    if isinstance(message, str):
        return message
    return " ".join(str(part.get("text", "")) for part in message if part.get("type") == "text")


# -- stored history in conversation form ---------------------------------------

_FENCED_CONTEXT = re.compile(r"<\s*memory-context\s*>[\s\S]*?</\s*memory-context\s*>", re.IGNORECASE)
_CONTEXT_NOTE = re.compile(
    r"\[System note:\s*The following is recalled memory context,\s*NOT new user input\.\s*"
    r"Treat as (?:informational background data|authoritative reference data[^\]]*)\.\]\s*",
    re.IGNORECASE,
)
_FENCE_TAG = re.compile(r"</?\s*memory-context\s*>", re.IGNORECASE)
_REVIEW_PROMPTS = (
    "Review the conversation above and update the skill library",
    "Review the conversation above and consider saving to memory",
)
_CONVERSATION_KEYS = ("tool_call_id", "tool_name", "tool_calls", "finish_reason", "reasoning")


def strip_context_fences(text: str) -> str:
    """Remove Hermes's injected memory-context blocks, their notes and stray fence tags."""
    text = _FENCED_CONTEXT.sub("", text)
    text = _CONTEXT_NOTE.sub("", text)
    return _FENCE_TAG.sub("", text)


def _is_review_prompt(msg: dict[str, Any]) -> bool:
    content = msg.get("content")
    return (
        msg.get("role") in ("user", "system")
        and isinstance(content, str)
        and content.lstrip().startswith(_REVIEW_PROMPTS)
    )


def conversation_history(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Active message rows (in id order) as the agent sees them.

    User and assistant text is cleaned of context fences and trimmed; persisted
    background-review prompts and the assistant reply right after each are dropped.
    """
    history: list[dict[str, Any]] = []
    skip_reply = False
    for row in rows:
        content = row.get("content")
        if row.get("role") in ("user", "assistant") and isinstance(content, str):
            content = strip_context_fences(content).strip()
        msg: dict[str, Any] = {"role": row.get("role"), "content": content}
        for key in _CONVERSATION_KEYS:
            if row.get(key):
                msg[key] = row[key]
        if _is_review_prompt(msg):
            skip_reply = True
            continue
        if skip_reply:
            skip_reply = False
            if msg["role"] == "assistant":
                continue
        history.append(msg)
    return history
