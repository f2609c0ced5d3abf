"""`hermes-server` command line: `serve` (and the fixture commands that build on it).

Every option has an environment fallback so the same image or Makefile target works
in docker-compose and CI without flags.
"""

from __future__ import annotations

import argparse
import ipaddress
import logging
import os
import sys
from pathlib import Path
from typing import Sequence

from hermes_server import UPSTREAM_VERSION, __version__
from hermes_server.config import Settings
from hermes_server.domain.keys import generate_key, key_problem

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
                       choices=["debug", "info", "warning", "error"], help="log verbosity (env HERMES_SERVER_LOG_LEVEL; default info)")
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
        log_level=args.log_level,
    )


def serve(args: argparse.Namespace) -> int:
    """Start uvicorn with the app; prints the key when it generated one."""
    import uvicorn

    from hermes_server.app import create_app
    from hermes_server.store.migrate import check_existing
    from hermes_server.store.errors import SchemaMismatch

    settings = settings_from_args(args)
    logging.basicConfig(level=settings.log_level.upper(), format="%(asctime)s %(levelname)s %(name)s: %(message)s")
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
        access_log=False,
        timeout_graceful_shutdown=10,
        lifespan="on",
    )
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command == "serve":
        return serve(args)
    parser.print_help()
    return 0 if args.command is None else 2
