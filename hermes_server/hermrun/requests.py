"""Checking herm.run request bodies and queries into typed requests (pure; no HTTP objects).

Each refusal is a 400 `validation_error` whose message and `param` name the first
invalid field, checked in the order the fields are documented. `null` counts as
absent everywhere; fields the API does not define are ignored. Strings that
herm-run.db could not store (an unpaired UTF-16 surrogate from a `\\ud800` escape)
are refused rather than failing later.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from hermes_server.hermrun.errors import ValidationFailed
from hermes_server.hermrun.rules import ARCHIVED, IDLE, RUNNING, WAITING

LIST_STATUSES = (IDLE, RUNNING, ARCHIVED)
DEFAULT_LIMIT = 50
MAX_LIMIT = 100
# Offsets past any table's size all give an empty page; larger ones are clamped to this
# for SQLite, whose integers are 64-bit.
MAX_SQL_OFFSET = 2**62
_DIGITS = re.compile(r"[0-9]+")


def _has_lone_surrogate(text: str) -> bool:
    return any("\ud800" <= ch <= "\udfff" for ch in text)


def decode_body(raw: bytes) -> dict[str, Any]:
    """The body as a JSON object (UTF-8), or the 400 saying why not."""
    try:
        payload = json.loads(raw.decode("utf-8"))
    except Exception:  # noqa: BLE001 - any decode or parse failure, RecursionError included
        raise ValidationFailed("request body must be valid JSON") from None
    if not isinstance(payload, dict):
        raise ValidationFailed("request body must be a JSON object")
    return payload


def _string(value: Any, name: str, *, param: str | None = None) -> str:
    """A non-empty, storable string (`param` defaults to the field's name)."""
    param = param or name
    if not isinstance(value, str):
        raise ValidationFailed(f"{name} must be a string", param)
    if not value.strip():
        raise ValidationFailed(f"{name} must not be empty", param)
    if _has_lone_surrogate(value):
        raise ValidationFailed(f"{name} contains an unpaired UTF-16 surrogate", param)
    return value


def _required(body: Mapping[str, Any], name: str) -> str:
    if body.get(name) is None:
        raise ValidationFailed(f"{name} is required", name)
    return _string(body[name], name)


def _optional(body: Mapping[str, Any], name: str) -> str | None:
    value = body.get(name)
    return None if value is None else _string(value, name)


def _flag(body: Mapping[str, Any], name: str) -> bool | None:
    value = body.get(name)
    if value is not None and not isinstance(value, bool):
        raise ValidationFailed(f"{name} must be a boolean", name)
    return value


def _metadata(body: Mapping[str, Any]) -> dict[str, str] | None:
    value = body.get("metadata")
    if value is None:
        return None
    if not isinstance(value, dict):
        raise ValidationFailed("metadata must be an object", "metadata")
    for key, item in value.items():
        if not isinstance(item, str):
            raise ValidationFailed(f"metadata values must be strings (key {key!r} is not)", "metadata")
        if _has_lone_surrogate(key) or _has_lone_surrogate(item):
            raise ValidationFailed(f"metadata key {key!r} or its value contains an unpaired UTF-16 surrogate",
                                   "metadata")
    return dict(value)


@dataclass(frozen=True)
class CreateRequest:
    """POST /v1/sessions, checked."""

    agent_id: str
    subject_id: str
    role: str | None = None
    title: str | None = None
    yolo_mode: bool = False
    preview: bool = False
    tag: str | None = None
    metadata: Mapping[str, str] | None = None


def parse_create(body: Mapping[str, Any]) -> CreateRequest:
    request = CreateRequest(
        agent_id=_required(body, "agentId"),
        subject_id=_required(body, "subjectId"),
        role=_optional(body, "role"),
        title=_optional(body, "title"),
        yolo_mode=bool(_flag(body, "yoloMode")),
        preview=bool(_flag(body, "preview")),
        tag=_optional(body, "tag"),
        metadata=_metadata(body),
    )
    if request.preview and request.tag is not None:
        raise ValidationFailed("preview: true and tag are mutually exclusive", "tag")
    return request


@dataclass(frozen=True)
class UpdateRequest:
    """POST /v1/sessions/{sessionId}, checked: None means "leave as it is"."""

    title: str | None = None
    yolo_mode: bool | None = None
    metadata: Mapping[str, str] | None = None


def parse_update(body: Mapping[str, Any]) -> UpdateRequest:
    request = UpdateRequest(_optional(body, "title"), _flag(body, "yoloMode"), _metadata(body))
    if request.title is None and request.yolo_mode is None and request.metadata is None:
        raise ValidationFailed("at least one of title, yoloMode or metadata is required")
    return request


@dataclass(frozen=True)
class WarmRequest:
    """POST /v1/sandboxes/warm, checked."""

    agent_id: str
    subject_id: str


def parse_warm(body: Mapping[str, Any]) -> WarmRequest:
    return WarmRequest(_required(body, "agentId"), _required(body, "subjectId"))


@dataclass(frozen=True)
class ListQuery:
    """GET /v1/sessions, checked; `status` None means every status but archived."""

    agent_id: str | None = None
    subject_id: str | None = None
    status: str | None = None
    limit: int = DEFAULT_LIMIT
    offset: int = 0

    @property
    def sql_offset(self) -> int:
        return min(self.offset, MAX_SQL_OFFSET)


def _filter(query: Mapping[str, str], name: str, alias: str) -> str | None:
    """A filter given by its name, its alias, or both (then they must be equal)."""
    values = {key: _string(query[key], key) for key in (name, alias) if key in query}
    if len(set(values.values())) > 1:
        raise ValidationFailed(f"{alias} and {name} must match when both are given", alias)
    return next(iter(values.values()), None)


def _whole(query: Mapping[str, str], name: str, default: int, low: int, high: int | None, wording: str) -> int:
    raw = query.get(name)
    if raw is None:
        return default
    if not _DIGITS.fullmatch(raw):
        raise ValidationFailed(f"{name} must be {wording}", name)
    value = _bounded_int(raw)
    if value < low or (high is not None and value > high):
        raise ValidationFailed(f"{name} must be {wording}", name)
    return value


# More digits than any bound here needs: Python's int() refuses strings over 4,300 digits, and
# every such number is past every limit (an offset past the end is an empty page).
_HUGE = 10**30


def _bounded_int(digits: str) -> int:
    significant = digits.lstrip("0") or "0"
    return _HUGE if len(significant) > 30 else int(significant)


def parse_list(query: Mapping[str, str]) -> ListQuery:
    """The list filters from decoded query parameters (a repeated parameter: its last value)."""
    agent_id = _filter(query, "agentId", "agent")
    subject_id = _filter(query, "subjectId", "subject")
    status = query.get("status")
    if status == WAITING:
        raise ValidationFailed(f"status {WAITING} is not accepted as a list filter; use idle, running or archived",
                               "status")
    if status is not None and status not in LIST_STATUSES:
        raise ValidationFailed("status must be one of idle, running, archived", "status")
    limit = _whole(query, "limit", DEFAULT_LIMIT, 1, MAX_LIMIT, f"an integer from 1 to {MAX_LIMIT}")
    offset = _whole(query, "offset", 0, 0, None, "a non-negative integer")
    return ListQuery(agent_id, subject_id, status, limit, offset)
