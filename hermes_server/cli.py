"""`hermes-server` command line: `serve` (and the fixture commands that build on it).

Every option has an environment fallback so the same image or Makefile target works
in docker-compose and CI without flags.
"""

from __future__ import annotations

import argparse
import ipaddress
import os
import sys
from pathlib import Path
from typing import Sequence

from hermes_server import UPSTREAM_VERSION, __version__
from hermes_server.config import Settings
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
                            "(all routes open; X-Hermes-Session-Key answered 403)")
    serve.add_argument("--model-name", default=None,
                       help="advertised model name, the default `model` of new sessions (env API_SERVER_MODEL_NAME; default hermes-agent)")
    serve.add_argument("--cors-origins", default=None,
                       help="comma-separated browser origins allowed, or * (env API_SERVER_CORS_ORIGINS; default none: any Origin header is refused with 403)")
    serve.add_argument("--log-level", default=_env("HERMES_SERVER_LOG_LEVEL", "info"),
                       choices=LEVELS, help="log verbosity (env HERMES_SERVER_LOG_LEVEL; default info)")
    serve.add_argument("--log-format", default=_env("HERMES_SERVER_LOG_FORMAT", "text"), choices=FORMATS,
                       help="text lines, or one JSON object per line for log collectors "
                            "(env HERMES_SERVER_LOG_FORMAT; default text)")
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


def settings_from_args(args: argparse.Namespace) -> Settings:
    """Resolve flags and environment into Settings; exits with a message on bad values."""
    home = Path(args.home or _env("HERMES_HOME") or Path.home() / ".hermes").expanduser()
    host = args.host or _env("API_SERVER_HOST", "127.0.0.1")
    port = args.port if args.port is not None else int(_env("API_SERVER_PORT", "8642"))
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
    )


def _choice(value: str, allowed: Sequence[str], env: str) -> str:
    """argparse checks flags against `choices` but not env-provided defaults; do it here."""
    if value not in allowed:
        raise SystemExit(f"hermes-server: {env}={value!r} is not one of {', '.join(allowed)}")
    return value


def serve(args: argparse.Namespace) -> int:
    """Start uvicorn with the app; prints the key when it generated one."""
    import uvicorn

    from hermes_server.app import create_app
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
    print(f"hermes-server: serving http://{settings.host}:{settings.port} over {settings.db_path}", flush=True)
    uvicorn.run(
        create_app(settings),
        host=settings.host,
        port=settings.port,
        log_level=settings.log_level,
        # Our handler and format (configure_logging) for uvicorn's loggers too, and our
        # access line instead of uvicorn's.
        log_config=None,
        access_log=False,
        # On SIGTERM/SIGINT: stop accepting, let in-flight requests finish (SSE streams
        # are told to end by sse-starlette), close state.db last, in lifespan shutdown.
        timeout_graceful_shutdown=10,
        lifespan="on",
    )
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
    parser.print_help()
    return 0 if args.command is None else 2
