#!/usr/bin/env python3
"""Side by side with upstream 0.19.0: the session chat scenarios (`hermes_server/contract/chat.py`:
fork, chat and chat/stream sequences, 91 steps).

Usage (from the repository root):

    .venv/bin/python tools/oracle_chat_diff.py [--verbose] [--keep] [--upstream-quirks]

Starts the oracle (`../shared/oracle/start_upstream.sh`, API port 18860, mock model 18861)
and hermes-server with its default echo agent (18870), each on a fresh home, then sends
every step to both, in the same order, and compares (`masks.SessionChat`):

- status, Content-Type, presence of the security headers, and the SSE headers
  (Cache-Control, X-Accel-Buffering), X-Hermes-Session-Id and X-Hermes-Session-Key;
- JSON bodies structurally, after normalising what legitimately differs:
  timestamps, generated ids (`api_…`, `run_…`, `msg_…`), the agent's text (the mock's
  `MOCK-REPLY …` and our `ECHO-REPLY …` both become `<reply>`), usage numbers, and
  the agent's own rewrite of `model` (`mock-model` after upstream's first turn);
- streams event by event: names in order, every payload's keys in order and its
  normalised values. A run of `assistant.delta` events counts as one (how the
  reply is cut is the agent's business); `tool.progress` `_thinking` events (each
  model call's content, reported by both agents) are compared like any other event,
  their text masked as the reply is, and counted.

Persisted message roles are compared through the `/messages` steps. Declared
deviations (D2 for `/messages` after a fork) are reported separately; with
`--upstream-quirks` (hermes-server started with that flag) they must be identical too.
Exit status 0 only when there is no unexpected difference. Usage numbers are also compared raw,
and the count of turns whose usage matched exactly is printed.
"""

from __future__ import annotations

import json
import sys
from typing import Any

from hermes_server.contract.suites import BY_NAME
from hermes_server.contract.wire import Answer
from oracle_common import Workbench, command_line, judge, played, rebased, side

ORACLE_PORT, OURS_PORT = rebased({"oracle": 18860, "ours": 18870}).values()


def raw_usage(answer: Answer) -> Any:
    """The usage numbers of a chat answer or the run.completed of a stream, if any."""
    if answer.headers.get("content-type") == "text/event-stream":
        for block in answer.body.decode("utf-8").split("\n\n"):
            if block.startswith("event: run.completed"):
                return json.loads(block.split("\ndata: ", 1)[1])["usage"]
        return None
    try:
        return json.loads(answer.body).get("usage")
    except (ValueError, AttributeError):
        return None


def run(verbose: bool, keep: bool, quirks: bool) -> int:
    with Workbench("hs-oracle-chat-diff-", keep) as bench:
        bench.oracle("oracle", ORACLE_PORT)
        bench.ours("ours", OURS_PORT, extra=["--upstream-quirks"] if quirks else [])
        suite = BY_NAME["chat"]
        norm = {"oracle": suite.normaliser(), "ours": suite.normaliser()}
        shaped = played(suite, side("oracle", {("key", "fast"): ORACLE_PORT}),
                        side("ours", {("key", "fast"): OURS_PORT}), norm)
        tally = judge(shaped, quirks, verbose)
        usage = [(raw_usage(item.answers["oracle"]), raw_usage(item.answers["ours"])) for item in shaped]
        turns = [(theirs, ours) for theirs, ours in usage if theirs is not None]
        unexpected = tally["unexpected"] + tally["unexercised"]
        print(f"\n{len(shaped)} requests: {tally['same']} identical after normalisation, {tally['expected']} expected "
              f"differences, {unexpected} unexpected differences; usage numbers equal in "
              f"{sum(theirs == ours for theirs, ours in turns)} of {len(turns)} turns; `_thinking` tool.progress "
              f"events: {norm['oracle'].tally['_thinking']} upstream, {norm['ours'].tally['_thinking']} ours"
              + (" (--upstream-quirks)" if quirks else ""))
        return 0 if unexpected == 0 else 1


def main() -> int:
    args = command_line(__doc__).parse_args()
    return run(args.verbose, args.keep, args.upstream_quirks)


if __name__ == "__main__":
    sys.exit(main())
