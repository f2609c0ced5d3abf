"""What 0.20+ stores for `POST /api/sessions`'s `source` and `model` (0.20.4's rules; docs/versions.md).

0.19.0 stores `source = 'api_server'` always and `model = body.model or --model-name`.
0.20.4 normalises the `source` a client names to a known platform (anything else is
`api_server`) and no longer stores the virtual alias: a session created without a model,
or with the served model name (bare or `provider::`-prefixed), has `model: null`.
"""

from __future__ import annotations

from typing import Any

DEFAULT_SOURCE = "api_server"
SOURCES = frozenset({"api_server", "hermes_browser", "cli", "telegram", "discord", "slack", "desktop", "dashboard"})
_ALIASES = {"browser": "hermes_browser"}


def session_source(raw: Any) -> str:
    """The stored source: a known platform (trimmed, any case; `browser` is `hermes_browser`),
    else `api_server`, as upstream's `_normalize_session_source` allows them."""
    if not isinstance(raw, str):
        return DEFAULT_SOURCE
    name = raw.strip().lower()
    name = _ALIASES.get(name, name)
    return name if name in SOURCES else DEFAULT_SOURCE


def given_fields(body: dict[str, Any], alias: str) -> tuple[Any, str]:
    """0.19.0's (model, source) of a create: the body's model, else the served name; `api_server`."""
    return body.get("model") or alias, DEFAULT_SOURCE


def normalised_fields(body: dict[str, Any], alias: str) -> tuple[Any, str]:
    """0.20.4's (model, source) of a create: the model without the alias, the source normalised."""
    return stored_model(body, alias), session_source(body.get("source"))


def stored_model(body: dict[str, Any], alias: str) -> str | None:
    """The model a create stores: `model` (else `model_id`), its `provider::` prefix dropped;
    None when neither is given as text or the model is the virtual alias (`alias`)."""
    for name in ("model", "model_id"):
        value = body.get(name)
        if isinstance(value, str) and value.strip():
            model = value.strip().partition("::")[2].strip() if "::" in value else value.strip()
            return None if not model or model == alias else model
    return None
