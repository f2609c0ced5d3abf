#!/usr/bin/env python3
"""Side by side with upstream 0.19.0: the chat completions scenarios
(`hermes_server/contract/completions.py`, 84 steps), then the rows they left.

Usage (from the repository root):

    .venv/bin/python tools/oracle_completions_diff.py [--verbose] [--keep] [--upstream-quirks]

Starts two oracles (`../shared/oracle/start_upstream.sh`: with a key on 19010, mock model
19011; without a key on 19012/19013) and two hermes-servers with the default echo agent
(19020 with the same key, 19021 with `--no-auth`), each on a fresh home. Every step goes to
the oracle, then to hermes-server, in the same order.

Compared per request (`masks.Completions`):
- status, Content-Type, whether the security headers are present, the SSE headers
  (Cache-Control, X-Accel-Buffering), the `Allow` header, X-Hermes-Session-Id and
  X-Hermes-Session-Key (the derived `api-<hash>` ids must be equal, not just alike);
- JSON bodies structurally, after normalising what legitimately differs: `created`,
  the `chatcmpl-…` id (its shape is checked), the agent's text (the mock's
  `MOCK-REPLY …` and our `ECHO-REPLY …` both become `<reply>`) and usage numbers;
- streams chunk by chunk: `data:` JSON payloads (keys in order, normalised values),
  `event:` names, `[DONE]`. A run of content chunks counts as one (how the reply is
  cut is the agent's business).

Then the rows both state.db files hold: every session (id, source, title, parent,
end state, message and api-call counts, whether model_config and system_prompt are
set) and every message (session, role, content with replies masked, finish_reason,
tool fields), in id order. Token counters and `model` (the agent's own) are left out.

Declared deviations (D6: a 400 where upstream answers a bare 500) are counted apart.
Exit status 0 only when there is no unexpected difference.
"""

from __future__ import annotations

import sqlite3
import sys
from pathlib import Path
from typing import Any

from hermes_server.contract.masks import Values
from hermes_server.contract.suites import BY_NAME
from oracle_common import Workbench, command_line, judge, played, rebased, side

PORTS = rebased({("oracle", "key"): 19010, ("oracle", "nokey"): 19012, ("ours", "key"): 19020,
                 ("ours", "nokey"): 19021})


def rows(db: Path) -> dict[str, list[Any]]:
    """What the turns left in state.db, without the agent's own numbers."""
    value = Values(BY_NAME["completions"].normaliser().value.masks)
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        sessions = conn.execute(
            "SELECT id, source, title, parent_session_id, ended_at IS NULL, end_reason, message_count,"
            " tool_call_count, api_call_count, model_config IS NOT NULL, COALESCE(system_prompt, '') != ''"
            " FROM sessions ORDER BY id").fetchall()
        messages = conn.execute(
            "SELECT session_id, role, content, tool_call_id, tool_calls, tool_name, finish_reason, active"
            " FROM messages ORDER BY id").fetchall()
    finally:
        conn.close()
    return {"sessions": [list(r) for r in sessions],
            "messages": [[value(None, v) if i == 2 else v for i, v in enumerate(r)] for r in messages]}


def compare_rows(homes: dict[str, Path]) -> int:
    """The state.db tables of both homes, row by row; how many tables differ."""
    stored = {name: rows(home / "state.db") for name, home in homes.items()}
    differing = 0
    for table in ("sessions", "messages"):
        theirs, ours = stored["oracle"][table], stored["ours"][table]
        if theirs == ours:
            print(f"state.db {table}: {len(ours)} rows, identical after normalisation")
            continue
        differing += 1
        print(f"unexpected state.db {table}: oracle {len(theirs)} rows, ours {len(ours)} rows")
        for i in range(max(len(theirs), len(ours))):
            t, o = (theirs[i] if i < len(theirs) else None), (ours[i] if i < len(ours) else None)
            if t != o:
                print(f"  row {i}:\n    oracle: {t}\n    ours:   {o}")
    return differing


def run(verbose: bool, keep: bool, quirks: bool = False) -> int:
    with Workbench("hs-oracle-completions-diff-", keep) as bench:
        for pair in ("key", "nokey"):
            bench.oracle(f"oracle-{pair}", PORTS[("oracle", pair)], no_key=pair == "nokey")
            bench.ours(f"ours-{pair}", PORTS[("ours", pair)], no_key=pair == "nokey",
                       extra=["--upstream-quirks"] if quirks else [])
        oracle, ours = ({(pair, "fast"): port for (w, pair), port in PORTS.items() if w == where}
                        for where in ("oracle", "ours"))
        shaped = played(BY_NAME["completions"], side("oracle", oracle), side("ours", ours))
        tally = judge(shaped, quirks, verbose, width=900)
        unexpected = tally["unexpected"] + tally["unexercised"]
        unexpected += compare_rows({where: bench.home(f"{where}-key") for where in ("oracle", "ours")})
        print(f"\n{len(shaped)} requests: {tally['same']} identical after normalisation, {tally['expected']} expected "
              f"differences, {unexpected} unexpected differences (state.db tables included)")
        return 0 if unexpected == 0 else 1


def main() -> int:
    args = command_line(__doc__).parse_args()
    return run(args.verbose, args.keep, args.upstream_quirks)


if __name__ == "__main__":
    sys.exit(main())
