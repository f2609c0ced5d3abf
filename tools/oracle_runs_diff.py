#!/usr/bin/env python3
"""Side by side with upstream 0.19.0: the structured runs and Responses API scenarios
(`hermes_server/contract/runs.py`, 126 steps).

Usage (from the repository root):

    .venv/bin/python tools/oracle_runs_diff.py [--verbose] [--keep] [--upstream-quirks]

Starts the oracle (API port 18610) over the scriptable mock model
(`tools/scriptable_mock_llm.py`, port 18611: `[[delay=S]]`, `[[chunkdelay=S]]` and
`[[tool=terminal:…]]` in the user text make turns slow, streamed slowly, or run a
dangerous command that asks for approval), and two hermes-servers: the default echo
agent (18620) and the script agent (18621) playing the same slow, streamed and
approval turns (`runs.SLOW_SCRIPT`). Every step goes to the oracle and to one of ours (its
`agent`), in the same order; run and response ids are taken from each side's own answers.
`wait` steps poll a run's status on both sides until it reaches one of the given statuses,
then compare it.

Compared (`masks.Runs`): status, Content-Type, security headers, SSE headers, the session
headers, JSON bodies after masking timestamps, durations, generated ids (by order of
appearance), token counts, message row ids and the agent's words (`MOCK-REPLY …`,
`ECHO-REPLY …`, `TOOL-DONE …` become `<reply>`, keeping the `[n=K]` count of messages the
model saw), and streams event by event (keys in order; a run of text deltas counts as one;
`reasoning.available` events are compared like the others, and counted on each side).
Declared deviations (docs/differences.md) are reported apart (a D10 stream only when nothing
but its `response.content_part.*` events differs); exit status 0 only without unexpected
differences. With `--upstream-quirks` both hermes-servers run with that flag and every step
must be identical, the declared ones included.
"""

from __future__ import annotations

import json
import os
import sys
import time

from hermes_server.contract.runs import SLOW_SCRIPT
from hermes_server.contract.suites import BY_NAME
from hermes_server.contract.wire import exchange, local
from oracle_common import REPO, Workbench, command_line, judge, played, rebased, side

WIDTH = int(os.environ.get("DIFF_WIDTH", "700"))
ORACLE_PORT, MOCK_PORT, FAST_PORT, SLOW_PORT = rebased({"oracle": 18610, "mock": 18611, "fast": 18620,
                                                        "slow": 18621}).values()


def run(verbose: bool, keep: bool, quirks: bool = False) -> int:
    with Workbench("hs-oracle-runs-diff-", keep) as bench:
        bench.process("mock", [sys.executable, str(REPO / "tools" / "scriptable_mock_llm.py"), "--port", str(MOCK_PORT)])
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline:
            try:
                exchange(local(MOCK_PORT), "GET", "/v1/models")
                break
            except OSError:
                time.sleep(0.1)
        os.environ["ORACLE_SKIP_MOCK"] = "1"
        bench.oracle("oracle", ORACLE_PORT)
        flag = ["--upstream-quirks"] if quirks else []
        bench.ours("fast", FAST_PORT, extra=flag)
        script = bench.dir / "slow-script.json"
        script.write_text(json.dumps(SLOW_SCRIPT))
        bench.ours("slow", SLOW_PORT, extra=["--agent", "script", "--agent-script", str(script), *flag])
        suite = BY_NAME["runs"]
        norm = {"oracle": suite.normaliser(), "ours": suite.normaliser()}
        shaped = played(suite, side("oracle", {("key", "fast"): ORACLE_PORT}),
                        side("ours", {("key", "fast"): FAST_PORT, ("key", "slow"): SLOW_PORT}), norm)
        tally = judge(shaped, quirks, verbose, width=WIDTH)
        unexpected = tally["unexpected"] + tally["unexercised"]
        mode = " (--upstream-quirks)" if quirks else ""
        print(f"\n{len(shaped)} requests{mode}: {tally['same']} identical after normalisation, {tally['expected']} "
              f"expected differences, {unexpected} unexpected differences; reasoning.available events: "
              f"{norm['oracle'].tally['reasoning.available']} upstream, {norm['ours'].tally['reasoning.available']} ours")
        return 0 if unexpected == 0 else 1


def main() -> int:
    args = command_line(__doc__).parse_args()
    return run(args.verbose, args.keep, args.upstream_quirks)


if __name__ == "__main__":
    sys.exit(main())
