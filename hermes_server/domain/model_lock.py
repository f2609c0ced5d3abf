"""The model inventory of 0.20+ (`GET /api/model/options`) and the rules of a session's model
lock (`POST /api/sessions/{id}/model`), over what this server can actually route to.

Upstream builds the inventory from the dashboard picker (every configured provider, pricing,
capability hints); hermes-server has one route: the configured agent (`--agent`) answering as
`--model-name` (and, for the `openai` agent, `--agent-model`). So the inventory is fixed and
a lock is accepted only for a model of it; any other request cannot be routed, and upstream
then refuses with 409 rather than fall back silently to the global model (docs/differences.md).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

ROUTE_SOURCE = "session_model_lock"
_PROVIDER_NAMES = {"echo": "hermes-server echo agent", "script": "hermes-server script agent",
                   "openai": "OpenAI-compatible backend"}


@dataclass(frozen=True)
class Inventory:
    """The one provider row this server routes to, and its models (the served name first)."""

    provider: str
    models: tuple[str, ...]

    @classmethod
    def of(cls, agent: str, model_name: str, agent_model: str | None) -> Inventory:
        models = (model_name,) if not agent_model or agent_model == model_name else (model_name, agent_model)
        return cls(agent, models)

    def payload(self) -> dict[str, Any]:
        """The picker payload's shape (`providers`, `model`, `provider`), one row long."""
        return {
            "providers": [{
                "slug": self.provider, "name": _PROVIDER_NAMES.get(self.provider, self.provider),
                "models": list(self.models), "total_models": len(self.models), "is_current": True,
                "is_user_defined": False, "authenticated": True,
            }],
            "model": self.models[0],
            "provider": self.provider,
        }


class LockRefused(Exception):
    """A lock request refused: `code` is upstream's (`missing_model`, `model_lock_unavailable`)."""

    def __init__(self, status: int, code: str, message: str, param: str | None = None) -> None:
        super().__init__(message)
        self.status, self.code, self.message, self.param = status, code, message, param


MISSING = "require_model_lock was set but no model/provider was provided"
UNROUTABLE = "Requested Browser model lock cannot be routed; refusing silent global fallback"


def _text(body: dict[str, Any], *names: str) -> str:
    """The first of `names` the body gives, trimmed; a value that is not text is a 400 naming it."""
    for name in names:
        value = body.get(name)
        if value is None:
            continue
        if not isinstance(value, str):
            raise LockRefused(400, "missing_model", f"'{name}' must be a string", name)
        if value.strip():
            return value.strip()
    return ""


@dataclass(frozen=True)
class LockRequest:
    """What a client asked to lock: `model`/`model_id` (`provider::model` accepted),
    `provider`/`provider_id`, and `model_options` (an object, kept as given)."""

    provider: str
    model: str
    model_options: dict[str, Any]

    @classmethod
    def parse(cls, body: dict[str, Any]) -> LockRequest:
        model = _text(body, "model", "model_id")
        provider = _text(body, "provider", "provider_id")
        if "::" in model:
            prefix, _, model = model.partition("::")
            provider = provider or prefix.strip()
            model = model.strip()
        options = body.get("model_options")
        if not model and not provider:
            raise LockRefused(400, "missing_model", MISSING)
        return cls(provider, model, options if isinstance(options, dict) else {})

    def route(self, inventory: Inventory) -> tuple[str, str]:
        """The (provider, model) the lock routes to, or 409: never the global model instead."""
        model = self.model or inventory.models[0]
        if self.provider not in ("", inventory.provider) or model not in inventory.models:
            raise LockRefused(409, "model_lock_unavailable", UNROUTABLE)
        return inventory.provider, model

    def answer(self, session_id: str, provider: str, model: str) -> dict[str, Any]:
        """The 200 body (`hermes.session.model_lock`)."""
        return {
            "object": "hermes.session.model_lock",
            "session_id": session_id,
            "runtime": {
                "provider": provider, "model": model, "route_source": ROUTE_SOURCE,
                "requested": {"provider": self.provider or None, "model": self.model or None},
                "model_lock": "accepted",
            },
        }

    def stored(self, provider: str, model: str, now: float) -> dict[str, Any]:
        """`model_config.browser_model_lock`, as upstream's `update_session_runtime_lock` merges it."""
        return {"provider": provider, "model": model, "model_options": self.model_options,
                "route_source": ROUTE_SOURCE, "confirmed": True, "updated_at": now}
