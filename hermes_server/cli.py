"""`hermes-server` command line: `serve` (and the fixture commands that build on it).

Every option has an environment fallback so the same image or Makefile target works
in docker-compose and CI without flags.
"""

from __future__ import annotations

import argparse
import ipaddress
import os
import signal
import sys
from pathlib import Path
from typing import Sequence

from hermes_server import UPSTREAM_VERSION, __version__
from hermes_server.agents import AGENT_NAMES
from hermes_server.config import MAX_HEAD_BYTES, MAX_HEADER_BYTES, MAX_REQUEST_LINE, Settings
from hermes_server.domain.keys import generate_key, key_problem
from hermes_server.logs import FORMATS, LEVELS, configure_logging

DESCRIPTION = f"""\
hermes-server: a local, faithful emulator of the Hermes Agent persistent-session API
(hermes-agent {UPSTREAM_VERSION}) over a Hermes-compatible state.db.

Point a connector or client at http://HOST:PORT with `Authorization: Bearer KEY`.
"""


def _env(name: str, default: str | None = None) -> str | None:
    value = os.environ.get(name, "").strip()
    return value or default


def _is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="hermes-server", description=DESCRIPTION, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--version", action="version", version=f"hermes-server {__version__} (emulates hermes-agent {UPSTREAM_VERSION})")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")
    serve = commands.add_parser(
        "serve",
        help="run the API server",
        description="Run the session API server. Options fall back to the environment variables shown.",
    )
    serve.add_argument("--home", default=None,
                       help="HERMES_HOME directory holding state.db (env HERMES_HOME; default ~/.hermes)")
    serve.add_argument("--host", default=None, help="address to listen on (env API_SERVER_HOST; default 127.0.0.1)")
    serve.add_argument("--port", type=int, default=None, help="port to listen on (env API_SERVER_PORT; default 8642)")
    serve.add_argument("--api-key", default=None,
                       help="bearer key clients must send (env API_SERVER_KEY); generated and printed when absent")
    serve.add_argument("--no-auth", action="store_true",
                       help="run without any key, as upstream does when none is configured "
                            "(all routes open; X-Hermes-Session-Key answered 403; env HERMES_SERVER_NO_AUTH=1)")
    serve.add_argument("--model-name", default=None,
                       help="advertised model name, the default `model` of new sessions (env API_SERVER_MODEL_NAME; default hermes-agent)")
    serve.add_argument("--cors-origins", default=None,
                       help="comma-separated browser origins allowed, or * (env API_SERVER_CORS_ORIGINS; default none: any Origin header is refused with 403)")
    serve.add_argument("--log-level", default=_env("HERMES_SERVER_LOG_LEVEL", "info"),
                       choices=LEVELS, help="log verbosity (env HERMES_SERVER_LOG_LEVEL; default info)")
    serve.add_argument("--log-format", default=_env("HERMES_SERVER_LOG_FORMAT", "text"), choices=FORMATS,
                       help="text lines, or one JSON object per line for log collectors "
                            "(env HERMES_SERVER_LOG_FORMAT; default text)")
    serve.add_argument("--shutdown-grace", type=float, default=_env("HERMES_SERVER_SHUTDOWN_GRACE", "10"),
                       metavar="SECONDS",
                       help="on SIGTERM/SIGINT, how long in-flight requests and open chat streams may run on "
                            "before they are cut (env HERMES_SERVER_SHUTDOWN_GRACE; default 10)")
    _add_chat_flags(serve)
    _add_head_flags(serve)
    _add_fixture_flags(serve)
    seed = commands.add_parser(
        "seed",
        help="load a fixture file into a state.db (a server may be running on it)",
        description="Merge the sessions and messages of a fixture file (docs/fixtures.md) into "
                    "HERMES_HOME/state.db in one transaction. An invalid fixture is rejected whole, "
                    "each problem named by its JSON path, and nothing is written.",
    )
    seed.add_argument("file", metavar="FILE", help="fixture file: JSON, or YAML (.yaml/.yml) when PyYAML is installed")
    seed.add_argument("--home", default=None,
                      help="HERMES_HOME directory holding state.db (env HERMES_HOME; default ~/.hermes)")
    seed.add_argument("--replace", action="store_true",
                      help="empty every session table first (same transaction), so state.db holds exactly the fixture")
    health = commands.add_parser(
        "healthcheck",
        help="exit 0 when a server answers GET /health (the container's HEALTHCHECK)",
        description="Probe a running server's /health; exit 0 when it answers 200, 1 otherwise.",
    )
    health.add_argument("--url", default=None,
                        help="base URL to probe (default http://127.0.0.1:PORT, PORT from env API_SERVER_PORT or 8642; "
                             "a specific API_SERVER_HOST is used instead of 127.0.0.1)")
    health.add_argument("--timeout", type=float, default=3.0, help="seconds to wait for the answer (default 3)")
    return parser


def _add_chat_flags(serve: argparse.ArgumentParser) -> None:
    """The agent behind POST .../chat and .../chat/stream, the stream keepalive, compression rotation."""
    chat = serve.add_argument_group("chat")
    chat.add_argument("--agent", default=_env("HERMES_SERVER_AGENT", "echo"), choices=AGENT_NAMES,
                      help="who answers chat turns: echo (offline, deterministic), openai (an OpenAI-compatible "
                           "chat-completions server), script (replies read from --agent-script) "
                           "(env HERMES_SERVER_AGENT; default echo)")
    chat.add_argument("--agent-base-url", default=_env("HERMES_SERVER_AGENT_BASE_URL"),
                      help="openai agent: base URL ending before /chat/completions, e.g. http://127.0.0.1:8080/v1 "
                           "(env HERMES_SERVER_AGENT_BASE_URL)")
    chat.add_argument("--agent-model", default=_env("HERMES_SERVER_AGENT_MODEL"),
                      help="openai agent: model name to request (env HERMES_SERVER_AGENT_MODEL; default --model-name)")
    chat.add_argument("--agent-api-key", default=_env("HERMES_SERVER_AGENT_API_KEY"),
                      help="openai agent: bearer key for the backend (env HERMES_SERVER_AGENT_API_KEY; default none)")
    chat.add_argument("--agent-script", default=_env("HERMES_SERVER_AGENT_SCRIPT"), metavar="FILE",
                      help="script agent: JSON file of replies, tool runs, delays and failures, re-read every turn "
                           "(env HERMES_SERVER_AGENT_SCRIPT; format in hermes_server/agents/script.py)")
    # String defaults pass through `type`, so a bad environment value gets argparse's message.
    chat.add_argument("--keepalive-seconds", type=float, default=_env("HERMES_SERVER_KEEPALIVE_SECONDS", "30"),
                      help="chat stream: seconds without an event before a `: keepalive` comment "
                           "(env HERMES_SERVER_KEEPALIVE_SECONDS; default 30, as upstream)")
    chat.add_argument("--compress-after-messages", type=int,
                      default=_env("HERMES_SERVER_COMPRESS_AFTER_MESSAGES"), metavar="N",
                      help="rotate a session into a compression continuation when a turn would take its active "
                           "transcript past N messages (env HERMES_SERVER_COMPRESS_AFTER_MESSAGES; default off)")


def _add_head_flags(serve: argparse.ArgumentParser) -> None:
    """Byte limits of a request head: a client never makes the server read (and hold) without end."""
    heads = serve.add_argument_group("request heads")
    for flag, env, default, what in (
        ("--max-request-line", "HERMES_SERVER_MAX_REQUEST_LINE", MAX_REQUEST_LINE, "the request line (longer: 414)"),
        ("--max-header-bytes", "HERMES_SERVER_MAX_HEADER_BYTES", MAX_HEADER_BYTES, "one header line (longer: 431)"),
        ("--max-head-bytes", "HERMES_SERVER_MAX_HEAD_BYTES", MAX_HEAD_BYTES,
         "the request line and all header lines together (longer: 431)"),
    ):
        heads.add_argument(flag, type=int, default=_env(env, str(default)), metavar="BYTES",
                           help=f"most bytes of {what}; the connection is closed (env {env}; default {default})")


def _head_settings(args: argparse.Namespace) -> dict[str, object]:
    limits = {"max_request_line": args.max_request_line, "max_header_bytes": args.max_header_bytes,
              "max_head_bytes": args.max_head_bytes}
    for name, value in limits.items():
        if value < 256:
            raise SystemExit(f"hermes-server: --{name.replace('_', '-')} must be at least 256")
    return limits


def _flag(value: bool, env: str) -> bool:
    """A switch given as a flag, or as env 1/true/yes."""
    return value or (_env(env, "") or "").lower() in ("1", "true", "yes")


def _add_fixture_flags(serve: argparse.ArgumentParser) -> None:
    """Test control (docs/fixtures.md, docs/testing-connectors.md); all off by default."""
    group = serve.add_argument_group("test control")
    group.add_argument("--fixture", default=_env("HERMES_SERVER_FIXTURE"), metavar="FILE",
                       help="merge this fixture file into state.db at start; POST /_fixture/reset returns to it "
                            "(env HERMES_SERVER_FIXTURE)")
    group.add_argument("--fixture-api", action="store_true",
                       help="serve the /_fixture/ control API (reset, seed, faults, request journal, clock), "
                            "behind the same bearer key (env HERMES_SERVER_FIXTURE_API=1; default off: 404)")
    group.add_argument("--deterministic", action="store_true",
                       help="reproducible generated ids (still api_<seconds>_<8 hex>) and a clock that starts at "
                            "2030-01-01T00:00:00Z and moves 1 ms per reading (env HERMES_SERVER_DETERMINISTIC=1)")


def _fixture_settings(args: argparse.Namespace) -> dict[str, object]:
    return {
        "fixture_api": _flag(args.fixture_api, "HERMES_SERVER_FIXTURE_API"),
        "fixture_path": Path(args.fixture).expanduser() if args.fixture else None,
        "deterministic": _flag(args.deterministic, "HERMES_SERVER_DETERMINISTIC"),
    }


def _fixture_problems(path: Path) -> str | None:
    """Every problem of a fixture file, one per line, or None when it is valid."""
    from hermes_server.fixtures import DocumentError, parse_fixture, read_document

    try:
        parse_fixture(read_document(path), 0.0)
    except DocumentError as exc:
        return f"fixture {path} rejected, nothing written:\n" + "\n".join(f"  {p}" for p in exc.problems)
    return None


def _chat_settings(args: argparse.Namespace) -> dict[str, object]:
    """The chat part of Settings, with the checks argparse cannot make."""
    if args.keepalive_seconds <= 0:
        raise SystemExit("hermes-server: --keepalive-seconds must be greater than 0")
    if args.compress_after_messages is not None and args.compress_after_messages < 1:
        raise SystemExit("hermes-server: --compress-after-messages must be at least 1")
    return {
        "agent": _choice(args.agent, AGENT_NAMES, "HERMES_SERVER_AGENT"),
        "agent_base_url": args.agent_base_url,
        "agent_model": args.agent_model,
        "agent_api_key": args.agent_api_key,
        "agent_script": Path(args.agent_script).expanduser() if args.agent_script else None,
        "keepalive_seconds": args.keepalive_seconds,
        "compress_after_messages": args.compress_after_messages,
    }


def settings_from_args(args: argparse.Namespace) -> Settings:
    """Resolve flags and environment into Settings; exits with a message on bad values."""
    home = Path(args.home or _env("HERMES_HOME") or Path.home() / ".hermes").expanduser()
    host = args.host or _env("API_SERVER_HOST", "127.0.0.1")
    port = args.port if args.port is not None else int(_env("API_SERVER_PORT", "8642"))
    # Resolved once here so `serve` reads the same answer (compose files set it by environment).
    args.no_auth = _flag(args.no_auth, "HERMES_SERVER_NO_AUTH")
    if args.no_auth:
        key = None
    else:
        key = args.api_key if args.api_key is not None else _env("API_SERVER_KEY")
        if key is not None:
            problem = key_problem(key)
            if problem:
                raise SystemExit(f"hermes-server: refusing to start: {problem}")
            key = key.strip()
    origins = args.cors_origins if args.cors_origins is not None else _env("API_SERVER_CORS_ORIGINS", "")
    return Settings(
        home=home,
        host=host,
        port=port,
        api_key=key,
        model_name=args.model_name or _env("API_SERVER_MODEL_NAME", "hermes-agent"),
        cors_origins=tuple(o.strip() for o in (origins or "").split(",") if o.strip()),
        log_level=_choice(args.log_level, LEVELS, "HERMES_SERVER_LOG_LEVEL"),
        log_format=_choice(args.log_format, FORMATS, "HERMES_SERVER_LOG_FORMAT"),
        shutdown_grace_seconds=_positive(args.shutdown_grace, "--shutdown-grace"),
        **_chat_settings(args),
        **_head_settings(args),
        **_fixture_settings(args),
    )


def _choice(value: str, allowed: Sequence[str], env: str) -> str:
    """argparse checks flags against `choices` but not env-provided defaults; do it here."""
    if value not in allowed:
        raise SystemExit(f"hermes-server: {env}={value!r} is not one of {', '.join(allowed)}")
    return value


def _positive(value: float, flag: str) -> float:
    if not value > 0:
        raise SystemExit(f"hermes-server: {flag} must be greater than 0")
    return value


def _exit_after_shutdown(signum: int, frame: object) -> None:
    raise SystemExit(0)


def serve(args: argparse.Namespace) -> int:
    """Start uvicorn with the app; prints the key when it generated one."""
    import uvicorn
    from sse_starlette.sse import AppStatus

    from hermes_server.app import create_app
    from hermes_server.heads import HeadLimits, protocol_for
    from hermes_server.store.migrate import check_existing
    from hermes_server.store.errors import SchemaMismatch

    settings = settings_from_args(args)
    configure_logging(settings.log_level, settings.log_format)
    if settings.api_key is None and not args.no_auth:
        settings = Settings(**{**settings.__dict__, "api_key": generate_key()})
        print(f"hermes-server: generated API key (send as 'Authorization: Bearer <key>'): {settings.api_key}", flush=True)
    if args.no_auth and not _is_loopback(settings.host):
        print(f"hermes-server: WARNING: --no-auth on non-loopback address {settings.host}: anyone who can reach it can read and change sessions.", file=sys.stderr, flush=True)
    try:
        check_existing(settings.db_path)
    except SchemaMismatch as exc:
        print(f"hermes-server: {exc}", file=sys.stderr)
        return 2
    if settings.fixture_path is not None:
        problems = _fixture_problems(settings.fixture_path)
        if problems:
            print(f"hermes-server: {problems}", file=sys.stderr)
            return 2
    if settings.fixture_api and settings.api_key is None and not _is_loopback(settings.host):
        print(f"hermes-server: WARNING: --fixture-api without a key on {settings.host}: anyone who can reach it can reset the database.", file=sys.stderr, flush=True)
    try:
        app = create_app(settings)
    except ValueError as exc:  # an unusable --agent configuration
        print(f"hermes-server: {exc}", file=sys.stderr)
        return 2
    print(f"hermes-server: serving http://{settings.host}:{settings.port} over {settings.db_path}", flush=True)
    # sse-starlette would cut every open stream the moment SIGTERM arrives; a stream is an
    # in-flight request like any other, so it gets the same grace period (below) to finish.
    AppStatus.disable_automatic_graceful_drain()
    # uvicorn re-raises a SIGTERM it handled once its graceful shutdown is done, so the default
    # action would then kill the process (status -15) although nothing was lost; a clean stop
    # exits 0, as Ctrl-C does.
    signal.signal(signal.SIGTERM, _exit_after_shutdown)
    uvicorn.run(
        app,
        host=settings.host,
        port=settings.port,
        log_level=settings.log_level,
        # Our handler and format (configure_logging) for uvicorn's loggers too, and our
        # access line instead of uvicorn's.
        log_config=None,
        access_log=False,
        # Like upstream's aiohttp, take the client address and scheme from the socket, never
        # from X-Forwarded-* (uvicorn trusts them from 127.0.0.1 by default), and skip that
        # per-request header scan.
        proxy_headers=False,
        # On SIGTERM/SIGINT: stop accepting, let in-flight requests and streams finish for up
        # to this long, then cancel them (app.py closes a cut stream with its last chunk);
        # chat turns and state.db are closed last, in lifespan shutdown.
        timeout_graceful_shutdown=settings.shutdown_grace_seconds,
        lifespan="on",
        # httptools with byte limits on the request head (heads.py).
        http=protocol_for(HeadLimits(settings.max_request_line, settings.max_header_bytes,
                                     settings.max_head_bytes, settings.max_request_bytes)),
    )
    return 0


def seed(args: argparse.Namespace) -> int:
    """`hermes-server seed FILE`: exit 0 loaded, 1 rejected (problems on stderr), 2 unusable state.db."""
    import asyncio
    import time

    from hermes_server.fixtures import DocumentError, parse_fixture, read_document
    from hermes_server.fixtures.load import seed_database
    from hermes_server.store.errors import DatabaseUnavailable, SchemaMismatch
    from hermes_server.store.migrate import check_existing

    home = Path(args.home or _env("HERMES_HOME") or Path.home() / ".hermes").expanduser()
    db_path = Settings(home=home).db_path
    path = Path(args.file).expanduser()
    try:
        check_existing(db_path)
        fixture = parse_fixture(read_document(path), time.time())
        result = asyncio.run(seed_database(db_path, fixture, replace=args.replace))
    except DocumentError as exc:
        print(f"hermes-server: fixture {path} rejected, nothing written:", file=sys.stderr)
        for problem in exc.problems:
            print(f"  {problem}", file=sys.stderr)
        return 1
    except (SchemaMismatch, DatabaseUnavailable) as exc:
        print(f"hermes-server: {exc}", file=sys.stderr)
        return 2
    print(f"hermes-server: loaded {path} into {db_path}: {result.sessions_written} sessions, "
          f"{result.messages_written} messages (state.db now holds {result.sessions_total} sessions)")
    return 0


def healthcheck_url(url: str | None) -> str:
    """Where `healthcheck` probes: --url, else this container's own API_SERVER_HOST/PORT."""
    if url:
        return url.rstrip("/") + "/health"
    host = _env("API_SERVER_HOST", "127.0.0.1")
    if host in ("0.0.0.0", "::", ""):
        host = "127.0.0.1"
    if ":" in host:
        host = f"[{host}]"
    return f"http://{host}:{_env('API_SERVER_PORT', '8642')}/health"


def healthcheck(args: argparse.Namespace) -> int:
    """Exit 0 when /health answers 200 (stdlib only: it runs in the slim image's HEALTHCHECK)."""
    import urllib.error
    import urllib.request

    url = healthcheck_url(args.url)
    try:
        # No proxy: the probe is always for this host, whatever HTTP_PROXY says.
        opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
        with opener.open(url, timeout=args.timeout) as response:
            ok = response.status == 200
    except (urllib.error.URLError, OSError, ValueError) as exc:
        print(f"hermes-server healthcheck: {url}: {exc}", file=sys.stderr)
        return 1
    if not ok:
        print(f"hermes-server healthcheck: {url}: status {response.status}", file=sys.stderr)
    return 0 if ok else 1


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command == "serve":
        return serve(args)
    if args.command == "healthcheck":
        return healthcheck(args)
    if args.command == "seed":
        return seed(args)
    parser.print_help()
    return 0 if args.command is None else 2
