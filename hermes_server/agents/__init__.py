"""Chat agents behind one interface (`base.Agent`), chosen with `--agent`."""

from __future__ import annotations

from hermes_server.agents.base import Agent
from hermes_server.config import Settings

AGENT_NAMES = ("echo", "openai", "script")


def build_agent(settings: Settings) -> Agent:
    """The agent `settings` ask for; ValueError when its options are missing or unusable."""
    if settings.agent == "echo":
        from hermes_server.agents.echo import EchoAgent

        return EchoAgent(settings.model_name)
    if settings.agent == "script":
        from hermes_server.agents.script import ScriptAgent

        if settings.agent_script is None:
            raise ValueError("--agent script needs --agent-script FILE")
        return ScriptAgent(settings.agent_script, settings.model_name)
    if settings.agent == "openai":
        from hermes_server.agents.openai import OpenAIAgent

        if not settings.agent_base_url:
            raise ValueError("--agent openai needs --agent-base-url (e.g. http://127.0.0.1:8080/v1)")
        return OpenAIAgent(settings.agent_base_url, settings.agent_model or settings.model_name, settings.agent_api_key)
    raise ValueError(f"unknown agent {settings.agent!r} (choose from {', '.join(AGENT_NAMES)})")
