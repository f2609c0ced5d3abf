"""`hermes-server verify URL`: the contract checked against any Hermes endpoint.

The scenarios of the package's corpus (`hermes_server/contract/`) that fit the target go to it
and to hermes-server references in this process, step by step; every difference from the
chosen profile's bug-for-bug reference is reported as drift, with the deviation or release
row that explains it (docs/verify.md). Exit 0: no drift; 1: drift; 2: a usage or connection
error (one line).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import secrets
import sys
from collections.abc import Callable
from typing import Any

from hermes_server.contract.ledger import Ledger
from hermes_server.contract.play import Side
from hermes_server.contract.report import Run, as_json, text
from hermes_server.contract.steps import Names, Need, Step
from hermes_server.contract.suites import SUITES, Suite
from hermes_server.contract.verify import Reference, run
from hermes_server.contract.wire import Endpoint, exchange
from hermes_server.domain.profiles import PROFILES

DESCRIPTION = """\
Check a running Hermes API server against hermes-server's contract: the behaviour scenarios
the project compares with the real hermes-agent 0.19.0 are sent to URL and to hermes-server
references started in this process (every served release, bug-for-bug and as served), and
every answer of URL that differs from the chosen profile's is reported as drift, with the
deviation (docs/differences.md, D1-D11) or release row (docs/versions.md) that explains it.

Safe on a server that matters: without --write it only reads (health, capabilities, models,
lists compared by shape, 404s, the 401 envelope, refusals that write nothing). With --write,
everything it creates is named with a unique prefix, nothing else is read back, changed or
deleted, and what it created is deleted at the end (the report lists anything it could not
remove). The model is only asked with --with-chat (a few short turns, compared by shape and
event sequence, never by text). The key is never printed.

Exit status: 0 no drift, 1 drift, 2 a usage or connection error."""
TIMEOUT = 10.0


class Refused(Exception):
    """A usage or connection problem: one line, exit 2."""


def add_parser(commands: Any) -> None:
    parser = commands.add_parser("verify", help="check a running Hermes server against the contract (drift report)",
                                 description=DESCRIPTION, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("url", metavar="URL", help="the server's base URL, e.g. http://127.0.0.1:8642")
    parser.add_argument("--key", default=None,
                        help="the server's API key (default: env API_SERVER_KEY); sent as a bearer, never printed")
    parser.add_argument("--profile", metavar="VERSION", default=None,
                        help=f"the release to hold it to ({', '.join(PROFILES)}); default: the version its /health "
                             "names, or the nearest served release")
    parser.add_argument("--write", action="store_true",
                        help="also create, change and delete things of its own (prefixed, removed at the end)")
    parser.add_argument("--with-chat", action="store_true",
                        help="also run a few short model turns (needs --write: a turn writes its session)")
    parser.add_argument("--json", action="store_true", help="print the report as JSON (the same data) for CI")


def nearest(version: str | None) -> tuple[str, str]:
    """The served release to hold a server claiming `version` to, and why."""
    if version in PROFILES:
        return version, f"its /health names {version}"
    numbers = _numbers(version)
    served = sorted(PROFILES, key=lambda v: _numbers(v) or ())
    if numbers is None:
        return served[0], f"its /health names no release this knows ({version!r}); the oldest served"
    same_minor = [v for v in served if (_numbers(v) or ())[:2] == numbers[:2]]
    below = [v for v in served if (_numbers(v) or ()) <= numbers]
    chosen = (same_minor or below or served[:1])[-1]
    return chosen, f"its /health names {version}, not served; the nearest served release"


def _numbers(version: str | None) -> tuple[int, ...] | None:
    match = re.fullmatch(r"v?(\d+)\.(\d+)(?:\.(\d+))?.*", version or "")
    return tuple(int(part or 0) for part in match.groups()) if match else None



def probe(where: Endpoint, key: str) -> tuple[str | None, str | None]:
    """What the target claims (/health's version) and its model name (/v1/models); Refused when it is
    not a Hermes API server or refuses the key."""
    try:
        health = exchange(where, "GET", "/health", timeout=TIMEOUT)
        models = exchange(where, "GET", "/v1/models", headers=[("Authorization", f"Bearer {key}")], timeout=TIMEOUT)
    except OSError as exc:
        raise Refused(f"cannot reach {where.url}: {exc}") from None
    claims = health.json_object()
    if health.status != 200 or "status" not in claims:
        raise Refused(f"{where.url}/health answered {health.status} without a health status: not a Hermes API server")
    if models.status == 401:
        raise Refused(f"{where.url} refused the key (401 from /v1/models): give its API_SERVER_KEY with --key")
    listed = models.json_object().get("data")
    model = listed[0].get("id") if isinstance(listed, list) and listed and isinstance(listed[0], dict) else None
    version = claims.get("version")
    return (version if isinstance(version, str) else None), (model if isinstance(model, str) else None)


def met_needs(args: argparse.Namespace) -> frozenset[Need]:
    met = set()
    if args.write:
        met.add(Need.WRITES)
    if args.with_chat:
        met.add(Need.CHAT)
    return frozenset(met)


def verify(args: argparse.Namespace) -> int:
    """Run the check; print the report (or one line for a usage or connection error)."""
    key = args.key or os.environ.get("API_SERVER_KEY", "").strip()
    try:
        if not key:
            raise Refused("give the server's key: --key KEY (or API_SERVER_KEY)")
        if args.with_chat and not args.write:
            raise Refused("--with-chat needs --write: a turn writes its session")
        try:
            where = Endpoint.parse(args.url)
        except ValueError as exc:
            raise Refused(str(exc)) from None
        if args.profile is not None and args.profile not in PROFILES:
            raise Refused(f"no profile {args.profile!r}; served: {', '.join(PROFILES)}")
        claims, model = probe(where, key)
        profile, why = (args.profile, "--profile") if args.profile else nearest(claims)
        report = check(where, key, claims, model, profile, why, args)
    except Refused as problem:
        print(f"hermes-server verify: {problem}", file=sys.stderr)
        return 2
    out = json.dumps(as_json(report), indent=1, ensure_ascii=False) if args.json else text(report)
    print(out.replace(key, "<key>"))
    return report.exit_status()


def check(where: Endpoint, key: str, claims: str | None, model: str | None, profile: str, why: str,
          args: argparse.Namespace) -> Run:
    """Play the corpus against the target and the references, then remove what it created."""
    from hermes_server.cli.references import references

    prefix = f"verify-{secrets.token_hex(3)}-"
    ledger = Ledger(prefix)
    target = Side("target", {("key", "fast"): where}, {"key": key}, observe=ledger.observe)
    wanted = [Reference(version, quirks) for version in PROFILES for quirks in (True, False)]
    mode = [flag for flag, on in (("--write", args.write), ("--with-chat", args.with_chat)) if on]
    say = (lambda line: None) if args.json else (lambda line: print(line, file=sys.stderr, flush=True))
    say(f"hermes-server verify: profile {profile} ({why}); prefix {prefix}")

    def steps_of(suite: Suite) -> list[Step]:
        """The suite's steps, its names apart from the other suites' (each was written for a home of its own)."""
        return suite.scenarios(Names(f"{prefix}{suite.name[:2]}-"))

    def playing(suite: Suite, count: int) -> None:
        say(f"  {suite.name}: {count} steps")

    lost: str | None = None
    try:
        with references(wanted, model) as sides:
            outcome = run(SUITES, steps_of, target, sides, Reference(profile, True), met_needs(args), playing)
    except OSError as exc:
        lost = f"lost {where.url} during the check: {exc}"
    except RuntimeError as exc:  # a reference that would not start
        lost = f"could not start the hermes-server references: {exc}"
    finally:
        auth = [("Authorization", f"Bearer {key}")]
        try:
            not_removed = ledger.clean(lambda method, path: exchange(where, method, path, headers=auth,
                                                                     timeout=TIMEOUT * 3))
        except OSError as exc:
            not_removed = [f"cleanup stopped: {exc}; still there: {ledger.counts()}"]
    if lost is not None:
        left = f"; could not remove: {'; '.join(not_removed)}" if not_removed else "; what it created was removed"
        raise Refused(lost + left)
    return Run(where.url, claims, profile, why, mode, prefix, wanted, outcome, ledger.counts(), not_removed,
               operation_names(profile))


def operation_names(profile: str) -> Callable[[str, str], str | None]:
    """The name docs/api.md gives the operation of a method and raw path (its `summary` in the
    profile's OpenAPI document, from which that page is generated), so the report speaks its words."""
    from hermes_server.app import openapi_document

    document = openapi_document(PROFILES[profile])
    operations = sorted(((path.split("/"), method.upper(), operation["summary"])
                         for path, item in document["paths"].items() for method, operation in item.items()
                         if isinstance(operation, dict) and "summary" in operation),
                        key=lambda row: sum(part.startswith("{") for part in row[0]))  # literal paths first

    def name(method: str, path: str) -> str | None:
        segments = path.split("?", 1)[0].split("/")
        for parts, verb, summary in operations:
            if verb == method and len(parts) == len(segments) and all(
                    part.startswith("{") or part == segment for part, segment in zip(parts, segments, strict=True)):
                return str(summary)
        return None
    return name
