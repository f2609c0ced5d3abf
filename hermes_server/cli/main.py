"""`hermes-server` command line: the parser and `main`; each command in a module of its own.

Every option has an environment fallback (one table, `options.py`, plus each known dialect's
rows) so the same image or Makefile target works in docker-compose and CI without flags.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from dataclasses import replace

from hermes_server import UPSTREAM_VERSION, __version__
from hermes_server.cli.audit import audit
from hermes_server.cli.healthcheck import KEY_HOME, PROBE_OPTIONS, healthcheck
from hermes_server.cli.options import (
    HOME,
    OptionError,
    add_options,
    env_text,
)
from hermes_server.cli.seed import seed
from hermes_server.cli.serve import serve, serve_options
from hermes_server.cli.upstream import add_gateway_arguments, add_profile_option, refused_action, select_profile
from hermes_server.cli.verify import add_parser as add_verify
from hermes_server.cli.verify import verify
from hermes_server.dialects import KNOWN
from hermes_server.http.logs import say

DESCRIPTION = f"""\
hermes-server: a local, faithful emulator of the Hermes Agent persistent-session API
(hermes-agent {UPSTREAM_VERSION}) over a Hermes-compatible state.db.

Point a connector or client at http://HOST:PORT with `Authorization: Bearer KEY`.
"""


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="hermes-server", description=DESCRIPTION, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--version", action="version",
                        version=f"hermes-server {__version__} (emulates hermes-agent {UPSTREAM_VERSION})")
    add_profile_option(parser)
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")
    serve = commands.add_parser(
        "serve",
        help="run the API server",
        description="Run the session API server. Options fall back to the environment variables shown, and "
                    "those to HERMES_HOME/.env, whose values win over the environment's (as upstream's).",
    )
    add_options(serve, *serve_options())
    gateway = commands.add_parser(
        "gateway", usage="hermes-server [-p NAME] gateway [run] [options]",
        help="upstream's command line: `[-p NAME] gateway run` is `serve` (the official image's compose files)",
        description="`gateway run` (or a bare `gateway`) serves exactly as `serve`: same options, environment "
                    "variables and defaults, for compose files and scripts written for upstream's image. "
                    "`-p NAME` serves upstream's profile NAME; upstream's own gateway options are accepted and "
                    "named once in the log as ignored.",
    )
    add_gateway_arguments(gateway)
    add_options(gateway, *serve_options())
    seed = commands.add_parser(
        "seed",
        help="load a fixture file into a state.db (a server may be running on it)",
        description="Merge the sessions and messages of a fixture file (format: docs/fixtures.md in the source) into "
                    "HERMES_HOME/state.db in one transaction. An invalid fixture is rejected whole, "
                    "each problem named by its JSON path, and nothing is written."
                    + "".join(f" {dialect.seed_note}" for dialect in KNOWN if dialect.seed_note),
    )
    seed.add_argument("file", metavar="FILE", help="fixture file: JSON, or YAML (.yaml/.yml) when PyYAML is installed")
    add_options(seed, (replace(HOME, help="the home whose state.db (made when missing) the fixture is loaded into"),))
    seed.add_argument("--replace", action="store_true",
                      help="empty every session table first (same transaction), so state.db holds exactly the "
                           "fixture" + "".join(f" ({dialect.replace_note})" for dialect in KNOWN if dialect.replace_note)
                           + "; refused when state.db holds sessions hermes-server did not write (source other than "
                           "api_server), unless --force")
    seed.add_argument("--force", action="store_true",
                      help="with --replace: replace even sessions hermes-server did not write (a real Hermes home's)")
    health = commands.add_parser(
        "healthcheck",
        help="exit 0 when a server answers GET /health (the container's HEALTHCHECK)",
        description="Probe a running server's /health; exit 0 when it answers 200, 1 otherwise.",
    )
    health.add_argument("--url", default=None,
                        help="base URL to probe (default http://127.0.0.1:PORT, PORT from env API_SERVER_PORT or 8642; "
                             "a specific API_SERVER_HOST is used instead of 127.0.0.1)")
    health.add_argument("--timeout", type=float, default=3.0, help="seconds to wait for the answer (default 3)")
    health.add_argument("--ready", action="store_true",
                        help="readiness instead of liveness: GET /health/detailed and exit 1 unless its state_db and "
                             "gateway checks are ok (a home that cannot hold state.db fails it); it sends "
                             "--api-key, else API_SERVER_KEY, else the key kept in --home, and says which")
    add_options(health, PROBE_OPTIONS)
    grade = commands.add_parser(
        "audit",
        help="print the audit of a running --fixture-api server: what the connector did against the contract",
        description="Ask a running server started with --fixture-api for its audit of the request journal "
                    "(GET /_fixture/audit; docs/testing-connectors.md in the source) and print the findings as a table. "
                    "Exit 0 when there is no error finding, 1 when there is one, 2 when the server could not be asked.",
    )
    grade.add_argument("--url", default=None,
                       help="the server's base URL (default http://127.0.0.1:PORT, PORT from env API_SERVER_PORT or "
                            "8642)")
    grade.add_argument("--api-key", default=None,
                       help="the server's key (default env API_SERVER_KEY, else the one kept in HERMES_HOME)")
    add_options(grade, (KEY_HOME,))
    grade.add_argument("--timeout", type=float, default=10.0, help="seconds to wait for the answer (default 10)")
    add_verify(commands)
    return parser


def refuse_unknown(parser: argparse.ArgumentParser, command: str | None, unknown: list[str]) -> None:
    """Exit 2 naming the unknown arguments in the usage of their command, with the closest option
    of that command for each misspelt one (`--prot` -> `--port`; Python 3.11's argparse suggests none)."""
    import difflib

    target = next((action.choices.get(command, parser) for action in parser._actions  # noqa: SLF001 - no public API
                   if command and isinstance(action, argparse._SubParsersAction)), parser)  # noqa: SLF001
    known = [flag for action in target._actions for flag in action.option_strings]  # noqa: SLF001
    hints = [f"{flag}: did you mean {close[0]}?" for flag in (argument.split("=", 1)[0] for argument in unknown)
             if flag.startswith("-") and (close := difflib.get_close_matches(flag, known, n=1, cutoff=0.6))]
    target.error(f"unrecognized arguments: {' '.join(unknown)}" + (f" ({'; '.join(hints)})" if hints else ""))


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args, unknown = parser.parse_known_args(argv)
    refusal = refused_action(args) if args.command == "gateway" else None
    if refusal:  # upstream's service actions: one line, whatever else was given
        print(refusal, file=sys.stderr)
        return 2
    if unknown:
        refuse_unknown(parser, args.command, unknown)
    if getattr(args, "hermes_profile", None) is not None and args.command != "gateway":
        print(f"hermes-server: -p/--profile goes with `gateway run`; with `{args.command or 'serve'}` give the home "
              "itself (--home, HERMES_HOME)", file=sys.stderr)
        return 2
    if args.command is None:  # a bare `hermes-server` is a usage error, not a success
        parser.print_help(sys.stderr)
        print("hermes-server: error: name a command, e.g. `hermes-server serve`", file=sys.stderr)
        return 2
    if args.command in ("serve", "gateway"):
        try:
            select_profile(args)
            return serve(args)
        except OptionError as refused:  # a refused option value: one line, the usage-error status
            # In JSON when that was asked for, even if another option was the bad one.
            fmt = "json" if (args.log_format or env_text("HERMES_SERVER_LOG_FORMAT")) == "json" else "text"
            say(str(refused), fmt, level="error", stream=sys.stderr)
            return 2
    if args.command == "healthcheck":
        return healthcheck(args)
    if args.command == "audit":
        return audit(args)
    if args.command == "verify":
        return verify(args)
    if args.command == "seed":
        try:
            return seed(args)
        except OptionError as refused:  # an unusable HERMES_HOME value
            print(f"hermes-server: {refused}", file=sys.stderr)
            return 1
    parser.print_help(sys.stderr)
    return 2
