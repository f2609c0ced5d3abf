"""Every option of `hermes-server serve` in one table: flag, environment variable, default, parser.

A value comes from its flag, else from its environment variable (blank counts as
unset), else the default, and goes through the same parser whichever it came from,
so a bad value is refused with one line naming where it came from, never a traceback.
`--help` is generated from the same rows, so it cannot disagree with what is read.
A row that fills a Settings field takes that field's default (`SETTING`), so each
default is written once, in config.py. A dialect brings rows of its own (families.py).
"""

from __future__ import annotations

import argparse
import math
import os
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import MISSING, dataclass
from pathlib import Path
from typing import Any

from hermes_server.agents import AGENT_NAMES
from hermes_server.config import Settings
from hermes_server.domain.profiles import PROFILES
from hermes_server.http.logs import FORMATS, LEVELS

Parser = Callable[[str], Any]
_TRUE = ("1", "true", "yes", "on")


class OptionError(ValueError):
    """A value an option refuses. A parser's message completes "<where the value came from> …";
    `Option.resolve` raises the whole line, which `main` prints (exit status 2)."""


class _FromSettings:
    """The default of the Settings field an option fills."""

    def __repr__(self) -> str:
        return "SETTING"


SETTING: Any = _FromSettings()


def env_text(name: str) -> str | None:
    """An environment variable's value, trimmed; None when unset or blank."""
    value = os.environ.get(name, "").strip()
    return value or None


# Where each variable set from a home's .env came from (cli/envfile.py fills it), so a refused
# value names the file it was read from.
ENV_ORIGINS: dict[str, Path] = {}


def from_file(name: str | None) -> str:
    """" (from PATH)" when the variable was read from a home's .env, else ""."""
    found = ENV_ORIGINS.get(name) if name else None
    return f" (from {found})" if found else ""


def text(value: str) -> str:
    return value


def name(value: str) -> str:
    """A name or key sent in headers and bodies: printable, no spaces or control characters."""
    if not value.isprintable() or any(c.isspace() for c in value.strip()):
        raise OptionError(f"must be one word of printable characters, got {value!r}")
    return value


def path(value: str) -> Path:
    return Path(value.strip()).expanduser()


def existing_file(what: str) -> Parser:
    """A file that must already be there when the server starts (`what` names it in the refusal)."""
    def parse(value: str) -> Path:
        found = path(value)
        if not found.is_file():
            raise OptionError(f"cannot read {what} {str(found)!r}: " +
                              ("it is a directory" if found.is_dir() else "no such file"))
        return found
    return parse


_LABEL = r"[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?"
_HOST_NAME = re.compile(rf"(?=.{{1,253}}$){_LABEL}(\.{_LABEL})*")


def host(value: str) -> str:
    """An IP address or a host name (whether it resolves is found when the socket is bound)."""
    import ipaddress

    candidate = value.strip()
    try:
        ipaddress.ip_address(candidate)
        return candidate
    except ValueError:
        pass
    if "://" in candidate or "/" in candidate:
        raise OptionError(f"must be an address or host name such as 127.0.0.1 or 0.0.0.0, not a URL: {value!r}")
    if not _HOST_NAME.fullmatch(candidate):
        raise OptionError(f"must be an IP address or host name such as 127.0.0.1, 0.0.0.0 or localhost, got {value!r}")
    return candidate


def url(value: str) -> str:
    """An http(s) URL with a host, e.g. http://127.0.0.1:8080/v1."""
    from urllib.parse import urlsplit

    candidate = value.strip()
    try:
        parts = urlsplit(candidate)
        parts.port  # noqa: B018 - raises ValueError on a bad port
    except ValueError:
        parts = None
    if parts is None or parts.scheme not in ("http", "https") or not parts.hostname:
        raise OptionError(f"must be an http:// or https:// URL such as http://127.0.0.1:8080/v1, got {value!r}")
    return candidate


def whole(minimum: int, maximum: int | None = None) -> Parser:
    def parse(value: str) -> int:
        try:
            number = int(value)
        except ValueError:
            raise OptionError(f"must be a whole number, got {value!r}") from None
        if number < minimum:
            raise OptionError(f"must be at least {minimum}")
        if maximum is not None and number > maximum:
            raise OptionError(f"must be at most {maximum}")
        return number
    return parse


def _number_of_seconds(value: str) -> float:
    try:
        return float(value)
    except ValueError:
        raise OptionError(f"must be a number of seconds, got {value!r}") from None


def positive(value: str) -> float:
    number = _number_of_seconds(value)
    if not number > 0 or math.isinf(number):
        raise OptionError(f"must be greater than 0 and finite, got {value!r}")
    return number


def seconds(value: str) -> float:
    number = _number_of_seconds(value)
    if not number >= 0 or math.isinf(number):
        raise OptionError("must be a finite number of seconds, 0 or more")
    return number


def one_of(choices: Sequence[str]) -> Parser:
    def parse(value: str) -> str:
        if value not in choices:
            raise OptionError(f"must be one of {', '.join(choices)}, got {value!r}")
        return value
    return parse


def origins(value: str) -> tuple[str, ...]:
    """`*`, or browser origins: scheme://host[:port], nothing after."""
    found = tuple(o.strip() for o in value.split(",") if o.strip())
    for origin in found:
        if origin != "*" and not re.fullmatch(r"[a-z][a-z0-9+.-]*://[^/?#\s]+", origin):
            raise OptionError(f"must be * or comma-separated origins like http://localhost:3000 "
                              f"(scheme://host[:port], no path), got {origin!r}")
    return found


_FALSE = ("0", "false", "no", "off")


@dataclass(frozen=True)
class Option:
    """One row of the table. `dest` is the Settings field (or CLI-only name) it fills."""

    dest: str
    flag: str
    env: str | None
    default: Any
    parse: Parser
    help: str
    group: str = "server"
    switch: bool = False
    metavar: str | None = None
    # How the default reads in --help, when not str(default).
    shown_default: str | None = None

    def __post_init__(self) -> None:
        if self.default is SETTING:
            declared = Settings.__dataclass_fields__[self.dest].default
            if declared is MISSING:
                raise TypeError(f"Settings.{self.dest} has no default for option {self.flag}")
            object.__setattr__(self, "default", declared)

    def help_text(self) -> str:
        where = [f"env {self.env}" + ("=1" if self.switch else "")] if self.env else []
        if not self.switch:
            shown = self.shown_default or ("none" if self.default is None else str(self.default))
            where.append(f"default {shown}")
        else:
            where.append("default off")
        return f"{self.help} ({'; '.join(where)})"

    def source(self, given: Any) -> str | None:
        """Where a value was given (the flag, else the environment variable's name, never its
        value: it may be a key), or None when the default holds."""
        if given not in (None, False):
            return self.flag
        return self.env if self.env and env_text(self.env) is not None else None

    def resolve(self, given: Any) -> Any:
        """The value from the flag (`given`), else the environment, else the default."""
        if self.switch:
            raw = (env_text(self.env) or "") if self.env else ""
            if raw and raw.lower() not in _TRUE + _FALSE:
                raise OptionError(f"{self.env}={raw!r}{from_file(self.env)} must be one of "
                                  f"{'/'.join(_TRUE)} (on) or {'/'.join(_FALSE)} (off)")
            return bool(given) or raw.lower() in _TRUE
        from_env = env_text(self.env) if self.env else None
        if given is not None:
            source, raw = self.flag, given
        elif from_env is not None:
            source, raw = f"{self.env}={from_env!r}{from_file(self.env)}", from_env
        else:
            return self.default
        try:
            return self.parse(raw)
        except OptionError as exc:
            raise OptionError(f"{source} {exc}") from None


def default_home() -> Path:
    """Where every command looks without --home or HERMES_HOME: upstream's ~/.hermes, except when
    this package runs from a source checkout (the venv `make` builds installs it editable). There
    it is the checkout's .hermes-home, the home `make serve` uses, so every command the README shows
    (`.venv/bin/hermes-server seed|audit|healthcheck`) reaches the server `make serve` started, and
    trying the checkout never writes into a real Hermes home."""
    checkout = Path(__file__).resolve().parents[2]
    try:
        ours = 'name = "hermes-server"' in (checkout / "pyproject.toml").read_text(encoding="utf-8")
    except OSError:
        ours = False
    return checkout / ".hermes-home" if ours and (checkout / "Makefile").is_file() else Path.home() / ".hermes"


HOME = Option("home", "--home", "HERMES_HOME", default_home(), path,
              "the directory holding state.db (made when missing) and the kept key; an existing Hermes home works",
              metavar="DIR", shown_default="~/.hermes; run from a source checkout, its ./.hermes-home, as make serve")

SERVE_OPTIONS: tuple[Option, ...] = (
    HOME,
    Option("host", "--host", "API_SERVER_HOST", SETTING, host, "address to listen on", metavar="ADDR"),
    Option("port", "--port", "API_SERVER_PORT", SETTING, whole(1, 65535), "port to listen on", metavar="N"),
    Option("api_key", "--api-key", "API_SERVER_KEY", SETTING, text,
           "bearer key clients must send; generated and printed when absent", metavar="KEY",
           shown_default="generated"),
    Option("no_auth", "--no-auth", "HERMES_SERVER_NO_AUTH", False, text,
           "run without any key, as upstream does when none is configured "
           "(all routes open; X-Hermes-Session-Key answered 403)", switch=True),
    Option("model_name", "--model-name", "API_SERVER_MODEL_NAME", SETTING, name,
           "advertised model name, the default `model` of new sessions", metavar="NAME"),
    Option("cors_origins", "--cors-origins", "API_SERVER_CORS_ORIGINS", SETTING, origins,
           "comma-separated browser origins allowed, or *", metavar="LIST",
           shown_default="none: any Origin header is refused with 403"),
    Option("hermes_version", "--hermes-version", "HERMES_SERVER_HERMES_VERSION", SETTING, one_of(tuple(PROFILES)),
           f"the Hermes release to answer as: {', '.join(PROFILES)} (docs/versions.md in the source)", metavar="VERSION"),
    Option("migrate_home", "--migrate-home", "HERMES_SERVER_MIGRATE_HOME", SETTING, text,
           "let a newer --hermes-version add the columns it stores into (sessions.pinned, hidden, "
           "last_read_at) to an existing state.db that lacks them, as Hermes 0.20+ does on open; schema_version "
           "and everything else stay as they are, and hermes-agent 0.19.0 still reads the file. Without it such a "
           "home is refused at start (exit 2); it never migrates an older schema", switch=True),
    Option("log_level", "--log-level", "HERMES_SERVER_LOG_LEVEL", SETTING, one_of(LEVELS),
           f"log verbosity: {', '.join(LEVELS)}", metavar="LEVEL"),
    Option("log_format", "--log-format", "HERMES_SERVER_LOG_FORMAT", SETTING, one_of(FORMATS),
           "text lines, or one JSON object per line for log collectors", metavar="FORMAT"),
    Option("shutdown_grace_seconds", "--shutdown-grace", "HERMES_SERVER_SHUTDOWN_GRACE", SETTING, positive,
           "on SIGTERM/SIGINT, how long in-flight requests and open chat streams may run on before they are cut",
           metavar="SECONDS", shown_default="10"),
    Option("turn_drain_seconds", "--turn-drain", "HERMES_SERVER_TURN_DRAIN", SETTING, positive,
           "after the grace period, how long chat turns still running (their requests ended) may run on to be "
           "stored before they are cancelled; a stop takes at most --shutdown-grace plus this",
           metavar="SECONDS", shown_default="15"),
    Option("read_cache_mb", "--read-cache-mb", "HERMES_SERVER_READ_CACHE_MB", SETTING, whole(0, 4096),
           "megabytes of session reads' answers (list, session, messages) kept until state.db changes; any "
           "commit, by this server or another process, empties it; 0 keeps none", metavar="MB"),
    Option("agent", "--agent", "HERMES_SERVER_AGENT", SETTING, one_of(AGENT_NAMES),
           "who answers chat turns: echo (offline, deterministic), openai (an OpenAI-compatible "
           "chat-completions server), script (replies read from --agent-script)", group="chat", metavar="NAME"),
    Option("agent_base_url", "--agent-base-url", "HERMES_SERVER_AGENT_BASE_URL", SETTING, url,
           "openai agent: base URL ending before /chat/completions, e.g. http://127.0.0.1:8080/v1",
           group="chat", metavar="URL"),
    Option("agent_model", "--agent-model", "HERMES_SERVER_AGENT_MODEL", SETTING, name,
           "openai agent: model name to request", group="chat", metavar="NAME", shown_default="--model-name"),
    Option("agent_api_key", "--agent-api-key", "HERMES_SERVER_AGENT_API_KEY", SETTING, name,
           "openai agent: bearer key for the backend", group="chat", metavar="KEY"),
    Option("agent_script", "--agent-script", "HERMES_SERVER_AGENT_SCRIPT", SETTING, existing_file("agent script"),
           "script agent: JSON file of replies, tool runs, delays and failures, re-read every turn "
           "(format: `python -m pydoc hermes_server.agents.script`)", group="chat", metavar="FILE"),
    Option("keepalive_seconds", "--keepalive-seconds", "HERMES_SERVER_KEEPALIVE_SECONDS", SETTING, positive,
           "chat stream: seconds without an event before a `: keepalive` comment", group="chat",
           metavar="S", shown_default="30, as upstream"),
    Option("compress_after_messages", "--compress-after-messages", "HERMES_SERVER_COMPRESS_AFTER_MESSAGES",
           SETTING, whole(1), "rotate a session into a compression continuation when a turn would take its active "
           "transcript past N messages", group="chat", metavar="N", shown_default="off"),
    Option("agent_delay", "--agent-delay", "HERMES_SERVER_AGENT_DELAY", SETTING, seconds,
           "hold every agent turn this long (after its user message is stored) before the agent answers, "
           "so stop, in-flight approval and the run cap can be tested", group="chat", metavar="SECONDS",
           shown_default="0"),
    Option("max_concurrent_runs", "--max-concurrent-runs", "HERMES_SERVER_MAX_CONCURRENT_RUNS", SETTING, whole(0),
           "live agent turns (runs, responses, chat completions, session chat) beyond which runs, responses "
           "and chat completions answer 429 with Retry-After: 1; 0 disables the cap", group="chat",
           metavar="N", shown_default="10, as upstream"),
    Option("max_request_line", "--max-request-line", "HERMES_SERVER_MAX_REQUEST_LINE", SETTING,
           whole(256), "most bytes of the request target (the path and query of the request line; not its "
           "method or version); longer: 400, connection closed", group="request heads", metavar="BYTES",
           shown_default="8190, as upstream"),
    Option("max_header_bytes", "--max-header-bytes", "HERMES_SERVER_MAX_HEADER_BYTES", SETTING,
           whole(256), "most bytes of a header value (from its first non-blank byte to the end of its line), "
           "of the first header's name and value together, and of a header name with the name before it; "
           "longer: 400, connection closed", group="request heads", metavar="BYTES",
           shown_default="8190, as upstream"),
    Option("max_headers", "--max-headers", "HERMES_SERVER_MAX_HEADERS", SETTING, whole(1),
           "most header lines of a request, Host included; more: 400, connection closed", group="request heads",
           metavar="N", shown_default="128, as upstream"),
    Option("max_head_bytes", "--max-head-bytes", "HERMES_SERVER_MAX_HEAD_BYTES", SETTING, whole(256),
           "most bytes of the request line and all header lines together, line ends included (upstream has "
           "no such limit; the default is above any head the other limits let through unpadded); longer: 400, "
           "connection closed", group="request heads", metavar="BYTES", shown_default="2097152"),
    Option("fixture_path", "--fixture", "HERMES_SERVER_FIXTURE", SETTING, existing_file("fixture"),
           "merge this fixture file into state.db at start; POST /_fixture/reset returns to it",
           group="test control", metavar="FILE"),
    Option("fixture_api", "--fixture-api", "HERMES_SERVER_FIXTURE_API", SETTING, text,
           "serve the /_fixture/ control API (reset, seed, faults, request journal, clock), "
           "behind the same bearer key (off: 404)", group="test control", switch=True),
    Option("deterministic", "--deterministic", "HERMES_SERVER_DETERMINISTIC", SETTING, text,
           "reproducible generated ids (still api_<seconds>_<8 hex>) and a clock that starts at "
           "2030-01-01T00:00:00Z and moves 1 ms per reading", group="test control", switch=True),
    Option("upstream_quirks", "--upstream-quirks", "HERMES_SERVER_UPSTREAM_QUIRKS", SETTING, text,
           "answer exactly as hermes-agent 0.19.0 does wherever it deviates on purpose (the list: "
           "docs/differences.md in the source; its text/plain 500s included), to see the failures real Hermes "
           "gives", group="test control",
           switch=True),
)

GROUP_TITLES = {"chat": "chat", "request heads": "request heads", "test control": "test control"}


def add_options(parser: argparse.ArgumentParser, options: Sequence[Option],
                titles: Mapping[str, str] = GROUP_TITLES) -> None:
    """Add each option as a flag (read as text; `resolve` parses it) under its group."""
    groups: dict[str, Any] = {}
    for option in options:
        target = parser if option.group == "server" else groups.setdefault(
            option.group, parser.add_argument_group(titles[option.group]))
        if option.switch:
            target.add_argument(option.flag, dest=option.dest, action="store_true", help=option.help_text())
        else:
            target.add_argument(option.flag, dest=option.dest, default=None, metavar=option.metavar,
                                help=option.help_text())


def resolve_all(args: argparse.Namespace, options: Sequence[Option]) -> dict[str, Any]:
    """Every option's value, by its `dest`."""
    return {option.dest: option.resolve(getattr(args, option.dest)) for option in options}
