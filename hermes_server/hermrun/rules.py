"""herm.run's decisions, as pure functions: agent versions, roles, statuses, the allowance, ids.

Nothing here touches storage or HTTP; store.py calls these inside its transactions,
so a refused request changes nothing.
"""

from __future__ import annotations

import math
import secrets
from collections.abc import Mapping
from dataclasses import dataclass, field

from hermes_server.hermrun.errors import InvalidState, RateLimited, ValidationFailed

IDLE = "idle"
RUNNING = "running"
WAITING = "waiting_on_human"
ARCHIVED = "archived"
STATUSES = (IDLE, RUNNING, WAITING, ARCHIVED)
# A turn is in progress: archive and delete refuse.
ACTIVE = (RUNNING, WAITING)

DEFAULT_VERSION = "v1"
SESSION_PREFIX = "session_"
ID_HEX_DIGITS = 16


@dataclass(frozen=True)
class Version:
    """One published agent version and the roles it defines."""

    id: str
    roles: tuple[str, ...] = ()


@dataclass(frozen=True)
class Allowance:
    """Conversations one subject may start with one agent per fixed window."""

    conversations: int
    window_seconds: float


@dataclass(frozen=True)
class Agent:
    """An agent: its versions in publication order, the production one, its development tags."""

    id: str
    versions: tuple[Version, ...]
    production: str
    tags: Mapping[str, str] = field(default_factory=dict)
    # This agent's own allowance, overriding the server's (None: the server's).
    allowance: Allowance | None = None

    def version(self, version_id: str) -> Version | None:
        return next((v for v in self.versions if v.id == version_id), None)


def default_agent(agent_id: str) -> Agent:
    """The agent any id names when no agent is declared: production `v1`, no roles, no tags."""
    return Agent(agent_id, (Version(DEFAULT_VERSION),), DEFAULT_VERSION)


def preview_version(agent: Agent) -> Version:
    """The newest unpromoted version: the last one published after production (else production)."""
    ids = [v.id for v in agent.versions]
    position = ids.index(agent.production)
    return agent.versions[-1] if position < len(ids) - 1 else agent.versions[position]


def resolve_version(agent: Agent, *, preview: bool, tag: str | None) -> Version:
    """The version a new session records: production, the preview one, or the tag's target."""
    if tag is not None:
        target = agent.tags.get(tag)
        if target is None:
            raise ValidationFailed(f"tag {tag!r} is not a development tag of agent {agent.id!r}", "tag")
        version = agent.version(target)
        assert version is not None  # fixtures only accept tags that target a listed version
        return version
    if preview:
        return preview_version(agent)
    version = agent.version(agent.production)
    assert version is not None
    return version


def check_role(agent: Agent, version: Version, role: str | None) -> None:
    """A role must be one the recorded version defines."""
    if role is not None and role not in version.roles:
        raise ValidationFailed(
            f"role {role!r} is not defined by version {version.id!r} of agent {agent.id!r}", "role")


def check_inactive(session_id: str, status: str, action: str) -> None:
    """Archive and delete need a session without a running or waiting turn."""
    if status in ACTIVE:
        raise InvalidState(f"session {session_id!r} is {status}; it cannot be {action} while a turn is active")


@dataclass(frozen=True)
class Window:
    """One subject's use of an agent's allowance: when its window began and how much is used."""

    start: float
    used: int


def take_conversation(now: float, current: Window | None, allowance: Allowance) -> Window:
    """The window after one more create, or RateLimited when the allowance is spent.

    A window starts at the first create counted in it and lasts `window_seconds`; the
    first create at or after its end (or before its start, when a test clock was moved
    back) starts a new one. Retry-After is the whole seconds until the window ends, at
    least 1.
    """
    if current is None or not current.start <= now < current.start + allowance.window_seconds:
        current = Window(now, 0)
    if current.used >= allowance.conversations:
        left = current.start + allowance.window_seconds - now
        raise RateLimited(
            f"the conversation allowance of this agent for this subject is spent "
            f"({allowance.conversations} per {allowance.window_seconds:g} s); retry after the Retry-After delay",
            max(1, math.ceil(left)),
        )
    return Window(current.start, current.used + 1)


def session_id(number: int | None) -> str:
    """`session_` and 16 hex digits: of `number` (deterministic mode) or random."""
    digits = f"{number:0{ID_HEX_DIGITS}x}" if number is not None else secrets.token_hex(ID_HEX_DIGITS // 2)
    return SESSION_PREFIX + digits
