#!/usr/bin/env python3
"""Side by side with upstream 0.19.0: the cron jobs, skills, toolsets, platform events, cron fire
and `_thinking` scenarios (`hermes_server/contract/jobs.py`, 104 steps).

Usage (from the repository root):

    .venv/bin/python tools/oracle_jobs_diff.py [--verbose] [--keep] [--upstream-quirks]

Starts the oracle (API port 18640, mock model 18641) and hermes-server (18650), each on
a fresh home holding the same skills (`jobs.SKILLS`), sends every step to both in the same
order and compares status, Content-Type, the Allow header, the presence of the security
headers, and JSON bodies after normalising what legitimately differs (`masks.Jobs`): job ids
and session/run/message ids (numbered in order of appearance), timestamps, the agent's
text (`MOCK-REPLY …`/`ECHO-REPLY …`), and usage numbers. hermes-server's home gets a copy
of the oracle's `config.yaml`, so a job's provider/model snapshot is compared as is. Streams are
compared event by event (`assistant.delta` runs count as one, `_thinking` deltas
compared after masking the reply). Steps marked D8 (jobs bad input, docs/differences.md)
must differ in exactly the status; with `--upstream-quirks` every step must be identical.
Exit status 0 only when there is no unexpected difference.
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

from hermes_server.contract.jobs import SKILLS
from hermes_server.contract.suites import BY_NAME
from oracle_common import Workbench, command_line, judge, played, rebased, side

ORACLE_PORT, OURS_PORT = rebased({"oracle": 18640, "ours": 18650}).values()


def _home(path: Path) -> None:
    for name, text in SKILLS.items():
        target = path / "skills" / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text)


def run(verbose: bool, keep: bool, quirks: bool) -> int:
    with Workbench("oracle-jobs-", keep) as bench:
        for name in ("oracle", "ours"):
            _home(bench.home(name))
        oracle_home = bench.oracle("oracle", ORACLE_PORT)
        # The same configuration on both homes: the jobs' provider/model snapshots come from it.
        shutil.copy(oracle_home / "config.yaml", bench.home("ours") / "config.yaml")
        bench.ours("ours", OURS_PORT, extra=["--upstream-quirks"] if quirks else [])
        shaped = played(BY_NAME["jobs"], side("oracle", {("key", "fast"): ORACLE_PORT}),
                        side("ours", {("key", "fast"): OURS_PORT}))
        tally = judge(shaped, quirks, verbose, width=400)
        unexpected = tally["unexpected"] + tally["unexercised"]
        mode = " (--upstream-quirks)" if quirks else ""
        print(f"\n{len(shaped)} requests{mode}: {tally['same']} identical, {tally['expected']} declared deviations, "
              f"{unexpected} unexpected differences")
        return 1 if unexpected else 0


def main() -> int:
    args = command_line(__doc__).parse_args()
    return run(args.verbose, args.keep, args.upstream_quirks)


if __name__ == "__main__":
    sys.exit(main())
