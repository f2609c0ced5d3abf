"""The `runtime` block 0.20+ adds to session chat answers and stream events (docs/versions.md).

Upstream's `_sanitize_runtime_metadata` always gives `provider`, `model` and `route_source`,
then `requested` when the request named a runtime and `model_lock` when a lock holds. This
server routes every turn to the one configured agent (domain/model_lock.py's inventory), so
the source is `session_model_lock` when the session holds a confirmed lock (the lock only
accepts a model of that inventory), else `global`; a model a request names is reported under
`requested` but does not switch the agent (docs/differences.md).
"""

from __future__ import annotations

import json
from typing import Any

from hermes_server.domain.model_lock import ROUTE_SOURCE, Inventory, LockRequest
from hermes_server.domain.params import request_bool


def session_lock(model_config: Any) -> dict[str, Any] | None:
    """The confirmed `browser_model_lock` of a stored `model_config`, or None (also for bad JSON)."""
    if not isinstance(model_config, str) or not model_config:
        return None
    try:
        config = json.loads(model_config)
    except ValueError:
        return None
    lock = config.get("browser_model_lock") if isinstance(config, dict) else None
    if not isinstance(lock, dict) or lock.get("confirmed") is not True:
        return None
    if not isinstance(lock.get("model"), str) or not isinstance(lock.get("provider"), str):
        return None
    return lock


def _named(body: dict[str, Any], *names: str) -> str | None:
    for name in names:
        value = body.get(name)
        if isinstance(value, str) and value.strip():
            return value.strip()
    return None


def requested_runtime(body: dict[str, Any]) -> dict[str, Any] | None:
    """`{provider, model}` a chat body names (`model`/`model_id`, `provider`/`provider_id`,
    `provider::model`), or None when it names neither; values that are not text are ignored."""
    model = _named(body, "model", "model_id")
    provider = _named(body, "provider", "provider_id")
    if model and "::" in model:
        prefix, _, rest = model.partition("::")
        provider, model = provider or prefix.strip() or None, rest.strip() or None
    if model is None and provider is None:
        return None
    return {"provider": provider, "model": model}


def lock_required(body: dict[str, Any]) -> bool:
    """Whether a chat body sets `require_model_lock` (JSON `true`, or `1/true/yes/on` as text)."""
    value = body.get("require_model_lock")
    return value is True or (isinstance(value, str) and request_bool(value))


def no_runtime(model_config: Any, body: dict[str, Any], inventory: Inventory) -> dict[str, Any] | None:
    """0.19.0: a turn reports no `runtime` and ignores `require_model_lock`."""
    return None


def checked_runtime(model_config: Any, body: dict[str, Any], inventory: Inventory) -> dict[str, Any] | None:
    """0.20.4: 400 `missing_model` or 409 `model_lock_unavailable` (LockRefused) when the body
    requires a lock this server cannot route, else the turn's `runtime` block."""
    if lock_required(body):
        LockRequest.parse(body).route(inventory)
    return turn_runtime(model_config, body, inventory)


def turn_runtime(model_config: Any, body: dict[str, Any], inventory: Inventory) -> dict[str, Any]:
    """The turn's `runtime` block, in upstream's key order."""
    lock = session_lock(model_config)
    if lock is not None:
        runtime: dict[str, Any] = {"provider": lock["provider"], "model": lock["model"], "route_source": ROUTE_SOURCE}
    else:
        runtime = {"provider": inventory.provider, "model": inventory.models[0], "route_source": "global"}
    requested = requested_runtime(body)
    if requested is not None:
        runtime["requested"] = requested
    if lock is not None:
        runtime["model_lock"] = "confirmed"
    return runtime
