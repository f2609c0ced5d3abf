"""`hermes-server audit`: print what a running `--fixture-api` server's audit found, stdlib only.

The audit (`GET /_fixture/audit`, docs/testing-connectors.md) grades the traffic in the
request journal since the last reset against the session contract. This command is the
same answer for a person or a CI step: a table, and an exit status (0 clean or warnings
only, 1 any error finding, 2 the server could not be asked).
"""

from __future__ import annotations

import argparse
import json
import sys
import urllib.error
import urllib.request
from typing import Any

from hermes_server.cli.envfile import load_for
from hermes_server.cli.healthcheck import healthcheck_url, probe_key
from hermes_server.cli.options import OptionError

COLUMNS = ("severity", "rule", "requests", "session", "what the connector should have done")


class Unusable(Exception):
    """The server could not be asked, or did not answer an audit."""


def fetch(url: str, key: str | None, timeout: float) -> dict[str, Any]:
    """The audit answer of the server at `url` (its /_fixture/audit)."""
    request = urllib.request.Request(url)
    if key:
        request.add_header("Authorization", f"Bearer {key}")
    try:
        opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))  # always this host, never a proxy
        with opener.open(request, timeout=timeout) as response:
            body = response.read()
    except urllib.error.HTTPError as exc:
        hint = {401: " (give the server's key: --api-key or API_SERVER_KEY)",
                404: " (is the server running with --fixture-api?)"}.get(exc.code, "")
        raise Unusable(f"{url}: status {exc.code}{hint}") from None
    except (urllib.error.URLError, OSError, ValueError) as exc:
        raise Unusable(f"{url}: {exc}") from None
    try:
        answer = json.loads(body)
    except ValueError:
        raise Unusable(f"{url}: not JSON") from None
    if not isinstance(answer, dict) or answer.get("object") != "hermes_server.audit" \
            or not isinstance(answer.get("findings"), list):
        raise Unusable(f"{url}: not an audit answer")
    return answer


def table(findings: list[dict[str, Any]]) -> str:
    """The findings as aligned columns, the message last (it is the long one)."""
    rows = [COLUMNS] + [(str(f.get("severity")), str(f.get("rule")), ",".join(map(str, f.get("requests") or [])),
                         "-" if f.get("session_id") is None else str(f.get("session_id")), str(f.get("message")))
                        for f in findings]
    widths = [max(len(row[i]) for row in rows) for i in range(len(COLUMNS) - 1)]
    return "\n".join("  ".join([*(cell.ljust(w) for cell, w in zip(row, widths, strict=False)), row[-1]]).rstrip()
                     for row in rows)


def audit(args: argparse.Namespace) -> int:
    """Print the audit; exit 1 on any error finding, 2 when the server could not be asked."""
    try:
        load_for(args)  # the home's .env, as the server read it: its key and port
    except OptionError as refused:
        print(f"hermes-server audit: {refused}", file=sys.stderr)
        return 2
    url = healthcheck_url(args.url, "/_fixture/audit")
    try:
        answer = fetch(url, probe_key(args)[0], args.timeout)
    except Unusable as problem:
        print(f"hermes-server audit: {problem}", file=sys.stderr)
        return 2
    findings = answer["findings"]
    errors = sum(1 for f in findings if isinstance(f, dict) and f.get("severity") == "error")
    checked = answer.get("checked")
    if findings:
        print(table([f for f in findings if isinstance(f, dict)]))
        print(f"\n{len(findings)} finding(s), {errors} error(s), in {checked} journalled request(s)")
    else:
        print(f"clean: no findings in {checked} journalled request(s)")
    return 1 if errors else 0
