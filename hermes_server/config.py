"""Settings: every knob of a running server in one frozen value.

The CLI builds it from flags and environment; the app and its parts only read it.
The defaults are written here once: the command line's option rows read them from
these fields. A dialect's own knobs are not fields: they come from its option rows
into `extras` (see hermes_server/families.py), so this module knows no dialect; the
dialect reads them through typed keys (`Extra`), so a misspelt name fails the type check
as a misspelt field does.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Generic, TypeVar, cast

MAX_REQUEST_BYTES = 10_000_000
# Limits of a request head (cli/head_limits.py, counted as there): the request target, one header
# field, the header lines: 0.19.0's (aiohttp's defaults). The whole head: hermes-server's own bound,
# above anything a head can hold under the other three without padding (about 1.6 MB).
MAX_REQUEST_LINE = 8190
MAX_HEADER_BYTES = 8190
MAX_HEADERS = 128
MAX_HEAD_BYTES = 2 * 1024 * 1024
DEFAULT_MODEL_NAME = "hermes-agent"

T = TypeVar("T")


@dataclass(frozen=True)
class Extra(Generic[T]):
    """The typed key of one dialect option's value in `Settings.extras`: the `dest` of its row.

    A dialect declares one per option (`ALLOWANCE: Extra[int] = Extra("<dialect>_allowance")`),
    builds its row with `ALLOWANCE.dest`, and reads `settings.extra(ALLOWANCE)`, an `int` to mypy.
    """

    dest: str


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
    max_request_line: int = MAX_REQUEST_LINE
    max_header_bytes: int = MAX_HEADER_BYTES
    max_headers: int = MAX_HEADERS
    max_head_bytes: int = MAX_HEAD_BYTES
    # Seconds without an event after which the chat stream writes `: keepalive`.
    keepalive_seconds: float = 30.0
    # The chat agent (`echo`, `openai`, `script`) and its options.
    agent: str = "echo"
    agent_base_url: str | None = None
    agent_model: str | None = None
    agent_api_key: str | None = None
    agent_script: Path | None = None
    # Rotate a session into a compression continuation when a turn would take its
    # active transcript past this many messages (None: never).
    compress_after_messages: int | None = None
    # Seconds every agent turn is held (after its user row is written) before the agent
    # answers, so a client can watch a live run: stop it, approve in flight, hit the cap.
    agent_delay: float = 0.0
    # Live agent turns (runs, responses, chat completions, session chat) beyond which the
    # agent routes answer 429, as upstream's `max_concurrent_runs`; 0 disables the cap.
    max_concurrent_runs: int = 10
    # Seconds a write keeps retrying while another process holds the SQLite write lock.
    write_retry_seconds: float = 15.0
    reader_threads: int = 2
    # Megabytes of session-read answers kept until state.db changes (0: none kept).
    read_cache_mb: int = 8
    log_level: str = "info"
    log_format: str = "text"
    # On SIGTERM, seconds in-flight requests (chat streams included) may run on.
    shutdown_grace_seconds: float = 10.0
    # Then, seconds chat turns still running may go on to be stored before they are cancelled.
    turn_drain_seconds: float = 15.0
    # Test-control extensions, all off by default (docs/differences.md, "Extensions"):
    # `/_fixture/*` control API with faults and the request journal,
    fixture_api: bool = False
    # a fixture file loaded at start (and what `POST /_fixture/reset` returns to),
    fixture_path: Path | None = None
    # reproducible generated ids and a settable clock.
    deterministic: bool = False
    # Answer as 0.19.0 does where docs/differences.md lists a deviation (serve --upstream-quirks).
    upstream_quirks: bool = False
    # The Hermes release answered as (serve --hermes-version; domain/profiles.py, docs/versions.md).
    hermes_version: str = "0.19.0"
    # The Hermes profile this home is: upstream's `default`, or, when a 0.21.6 server multiplexes
    # the default home's `profiles/<name>/` homes, that name (its runs' Idempotency-Key scope).
    profile: str = "default"
    # Add the columns the profile stores into to an existing state.db that lacks them
    # (serve --migrate-home; store/migrate.py). Off: such a home is refused at start.
    migrate_home: bool = False
    # The values of the known dialects' own options, by their rows' `dest` (each dialect's
    # switch among them); read with `extra` and the option's typed key.
    extras: Mapping[str, Any] = field(default_factory=dict, hash=False)

    def extra(self, key: Extra[T]) -> T:
        """A dialect option's value, typed by its key (present once the command line, or
        `families.with_defaults`, has filled `extras`)."""
        try:
            return cast(T, self.extras[key.dest])
        except KeyError:
            raise KeyError(f"Settings has no dialect option {key.dest!r}") from None

    @property
    def db_path(self) -> Path:
        """The state.db file inside HERMES_HOME, as upstream names it."""
        return self.home / "state.db"

    @property
    def response_store_path(self) -> Path:
        """The Responses API store beside state.db, as upstream names it."""
        return self.home / "response_store.db"

    @property
    def runs_idempotency_path(self) -> Path:
        """0.21's Idempotency-Key records of POST /v1/runs beside state.db, as upstream names the file."""
        return self.home / "runs_idempotency.db"
