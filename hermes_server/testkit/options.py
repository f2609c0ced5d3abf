"""What a test server runs with, as one typed, hashable value.

`HermesOptions` is what the pytest plugin's `hermes_options` fixture returns (override it in a
`conftest.py`, the way pytest-httpserver's `httpserver_listen_address` is overridden) and what
`make_hermes(**changes)` caches its extra servers by (and what a `hermes_version` marker
changes for one test). Each field is one `hermes-server serve` flag; `flags` carries any
other flag as given (a dialect's switch, a limit), so the kit needs no new field for each
new flag of the server.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class HermesOptions:
    """The `serve` flags of a test server (the launcher adds home, host, port, key and `--fixture-api`)."""

    agent: str | None = None  # echo (the server's default), openai, script
    hermes_version: str | None = None  # --hermes-version: the release it answers as (None: the server's, 0.19.0)
    deterministic: bool = False
    fixture: str | Path | None = None  # --fixture: loaded at start, and what a reset returns to
    upstream_quirks: bool = False
    agent_script: str | Path | None = None  # --agent-script (implies --agent script when no agent is named)
    agent_delay: float | None = None
    compress_after_messages: int | None = None
    flags: tuple[str, ...] = ()  # any other `serve` flags, e.g. a dialect's switch
    startup_timeout: float = 20.0
    # Environment variables the server gets on top of the test process's (a backend key, say).
    env: tuple[tuple[str, str], ...] = field(default=())

    def __post_init__(self) -> None:
        # A list given for `flags` or a dict for `env` would make the value unhashable (no cache key).
        object.__setattr__(self, "flags", tuple(self.flags))
        env: Any = self.env
        object.__setattr__(self, "env", tuple(sorted(env.items() if isinstance(env, dict) else env)))

    def replace(self, **changes: Any) -> HermesOptions:
        """These options with some fields changed (`flags` given as a list is fine)."""
        unknown = set(changes) - {f.name for f in fields(self)}
        if unknown:
            raise TypeError(f"HermesOptions has no field {', '.join(sorted(unknown))}")
        return replace(self, **changes)

    def serve_args(self) -> list[str]:
        """The `serve` flags these options stand for, in a stable order."""
        agent = self.agent or ("script" if self.agent_script is not None else None)
        args: list[str] = []
        if self.hermes_version is not None:
            args += ["--hermes-version", self.hermes_version]
        if agent:
            args += ["--agent", agent]
        if self.agent_script is not None:
            args += ["--agent-script", str(self.agent_script)]
        if self.deterministic:
            args.append("--deterministic")
        if self.fixture is not None:
            args += ["--fixture", str(self.fixture)]
        if self.upstream_quirks:
            args.append("--upstream-quirks")
        if self.agent_delay is not None:
            args += ["--agent-delay", repr(float(self.agent_delay))]
        if self.compress_after_messages is not None:
            args += ["--compress-after-messages", str(self.compress_after_messages)]
        return args + list(self.flags)
