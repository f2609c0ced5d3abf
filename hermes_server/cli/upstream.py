"""Upstream's command line: `hermes-server [-p NAME] gateway run [...]` serves exactly as `serve`.

Compose files written for the official image start it with `command: ["gateway", "run"]`,
some with `-p NAME gateway run --accept-hooks`; swapping only `image:` for hermes-server's
must keep them working. So `gateway run` (and a bare `gateway`, upstream's default action)
takes every `serve` option and environment variable with the same defaults, plus:

- `-p NAME` / `--profile NAME`: upstream's profile selection, as hermes-agent 0.19.0's
  `hermes_cli/main.py` does it: the home becomes `<root>/profiles/NAME`, which must exist,
  where the root is HERMES_HOME (its grandparent when HERMES_HOME is itself a
  `profiles/<name>` folder, `~/.hermes` when it lies inside `~/.hermes`); `default` is the
  root itself. The sticky `active_profile` file is not followed, as upstream's container
  does not follow it for its main gateway either.
- the options of upstream's `gateway run` that mean nothing here (`--accept-hooks`,
  `--replace`, `--no-supervise`, …): accepted, and named once in the log as ignored.

Upstream's other `gateway` actions manage a service (start, stop, install, status, …):
refused with one line and exit status 2, as there is no service to manage.
"""

from __future__ import annotations

import argparse
import re
from pathlib import Path
from typing import Any

from hermes_server.cli.options import HOME, OptionError, env_text, from_file

RUN = "run"
# Upstream's rules for a profile name (hermes_cli/profiles.py of the installed package).
_PROFILE_NAME = re.compile(r"[a-z0-9][a-z0-9_-]{0,63}")
_RESERVED = frozenset({"hermes", "test", "tmp", "root", "sudo"})

# Upstream `gateway run`'s options, none of which hermes-server has a use for: (flags, takes a value, what
# upstream does with it).
IGNORED = (
    (("--accept-hooks",), False, "approve config.yaml's shell hooks (hermes-server runs none)"),
    (("--replace",), False, "replace a gateway already running on this home"),
    (("--force",), False, "start beside a supervised gateway"),
    (("--no-supervise",), False, "opt out of the s6 supervision in upstream's image"),
    (("--external-supervisor",), False, "declare an outside process manager"),
    (("-v", "--verbose"), False, "more log lines (here: --log-level)"),
    (("-q", "--quiet"), False, "no log lines on stderr (here: --log-level)"),
    (("--platform",), True, "a messaging platform"),
)


class _Ignored(argparse.Action):
    """Record the flag as given (for the one log line), whatever it would do upstream."""

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, values: Any,
                 option_string: str | None = None) -> None:
        given = list(getattr(namespace, self.dest, None) or [])
        if option_string not in given:
            given.append(option_string)
        setattr(namespace, self.dest, given)


def add_profile_option(parser: argparse.ArgumentParser) -> None:
    """`-p NAME` / `--profile NAME`, wherever upstream takes it (before `gateway` or after it)."""
    parser.add_argument("-p", "--profile", metavar="NAME", dest="hermes_profile", default=argparse.SUPPRESS,
                        help="with `gateway run`: serve upstream's profile NAME, the home HERMES_HOME/profiles/NAME "
                             "(which must exist); `default` is HERMES_HOME itself")


def add_gateway_arguments(gateway: argparse.ArgumentParser) -> None:
    """The action (`run`, the default) and upstream's own `gateway run` options, shown as ignored."""
    gateway.add_argument("action", nargs="?", default=RUN, metavar="run",
                         help="run the server in the foreground (the only action; upstream's start, stop, status, "
                              "install … manage a service and are refused)")
    add_profile_option(gateway)
    group = gateway.add_argument_group("upstream's gateway run options, accepted and ignored")
    for flags, takes_value, does in IGNORED:
        group.add_argument(*flags, dest="ignored_upstream", action=_Ignored, nargs=1 if takes_value else 0,
                           default=argparse.SUPPRESS, metavar="X" if takes_value else None,
                           help=f"upstream: {does}")


def refused_action(args: argparse.Namespace) -> str | None:
    """The one line refusing an action other than `run`, or None."""
    if args.action == RUN:
        return None
    return (f"hermes-server: `gateway {args.action}` manages upstream's gateway service; hermes-server has none. "
            "It has `gateway run` (the server in the foreground, the same as `serve`)")


def hermes_root(given_home: str | None) -> Path:
    """The folder upstream's profiles live under, from --home, else HERMES_HOME, else ~/.hermes."""
    native = Path.home() / ".hermes"
    raw = given_home if given_home is not None else env_text(HOME.env or "")
    if not raw:
        return native
    home = HOME.resolve(raw)
    try:
        home.resolve().relative_to(native.resolve())
        return native
    except (ValueError, OSError):
        pass
    return home.parent.parent if home.parent.name == "profiles" else home


def profile_home(name: str, root: Path) -> Path:
    """The home upstream's `-p NAME` selects under `root`; OptionError when it would refuse it."""
    canon = name.strip()
    canon = "default" if canon.casefold() == "default" else canon.lower()
    if canon == "default":
        return root
    if not _PROFILE_NAME.fullmatch(canon):
        raise OptionError(f"-p {name!r}: a profile name is 1 to 64 characters of a-z, 0-9, _ and -, starting with "
                          "a letter or digit")
    if canon in _RESERVED:
        raise OptionError(f"-p {name!r}: {canon} is a reserved name, never a profile")
    home = root / "profiles" / canon
    try:
        found = home.is_dir()
    except OSError:
        found = False
    if not found:
        raise OptionError(f"-p {name!r}: profile {canon!r} does not exist: no folder {home} (upstream makes one "
                          f"with `hermes profile create {canon}`)")
    return home


def select_profile(args: argparse.Namespace) -> None:
    """Point `args.home` at the profile `-p` named (a flag, so it wins over HERMES_HOME)."""
    name = getattr(args, "hermes_profile", None)
    if name is None:
        return
    args.home = str(profile_home(name, hermes_root(args.home)))


def ignored_line(args: argparse.Namespace) -> str | None:
    """The one log line naming the upstream options given that hermes-server ignores, or None."""
    given = getattr(args, "ignored_upstream", None)
    if not given:
        return None
    return (f"gateway run: ignoring {', '.join(given)} (upstream's options, which mean nothing to hermes-server; "
            "it serves the API exactly as `serve`)")


def ignored_environment() -> str | None:
    """A line for an upstream setting whose value hermes-server cannot follow, or None: it always serves
    its API, where upstream serves it only with API_SERVER_ENABLED on."""
    enabled = env_text("API_SERVER_ENABLED")
    if enabled is not None and enabled.lower() in ("0", "false", "no", "off"):
        return (f"API_SERVER_ENABLED={enabled}{from_file('API_SERVER_ENABLED')} is ignored: hermes-server is the "
                "API server and always serves it")
    return None
