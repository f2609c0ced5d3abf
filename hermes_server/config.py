"""Settings: every knob of a running server in one frozen value.

The CLI builds it from flags and environment; the app and its parts only read it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

MAX_REQUEST_BYTES = 10_000_000
DEFAULT_MODEL_NAME = "hermes-agent"


@dataclass(frozen=True)
class Settings:
    """Configuration of one hermes-server instance."""

    home: Path
    host: str = "127.0.0.1"
    port: int = 8642
    # None means "no key configured": routes are open, X-Hermes-Session-Key is refused (403).
    api_key: str | None = None
    model_name: str = DEFAULT_MODEL_NAME
    cors_origins: tuple[str, ...] = ()
    max_request_bytes: int = MAX_REQUEST_BYTES
    keepalive_seconds: float = 30.0
    agent: str = "echo"
    agent_options: dict = field(default_factory=dict)
    compress_after_messages: int | None = None
    # Seconds a write keeps retrying while another process holds the SQLite write lock.
    write_retry_seconds: float = 15.0
    reader_threads: int = 4
    log_level: str = "info"
    log_format: str = "text"
    # Test-control extensions, all off by default (DECISIONS.md "Extensions"):
    # `/_fixture/*` control API with faults and the request journal,
    fixture_api: bool = False
    # a fixture file loaded at start (and what `POST /_fixture/reset` returns to),
    fixture_path: Path | None = None
    # reproducible generated ids and a settable clock.
    deterministic: bool = False

    @property
    def db_path(self) -> Path:
        """The state.db file inside HERMES_HOME, as upstream names it."""
        return self.home / "state.db"
