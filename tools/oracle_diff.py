#!/usr/bin/env python3
"""Differential check: the session routes' scenarios (`hermes_server/contract/sessions.py`, 364
steps) and the read probes (`probes.py`) against upstream hermes-agent 0.19.0 and hermes-server.

Usage (from the repository root):

    .venv/bin/python tools/oracle_diff.py [--verbose] [--keep] [--upstream-quirks]

With `--upstream-quirks` hermes-server runs with that flag and every step, the declared
deviations included, must be identical. HERMES_DIFF_PORT_BASE moves the ports.

It starts, on fresh temporary homes:
- the oracle (`../shared/oracle/start_upstream.sh`) three times: with a key (port 18800,
  mock 18801), without one (18802/18803), over a state.db that cannot be opened (18804/18805);
- hermes-server three times, the same way (18810, 18811 with `--no-auth`, 18812).

Both state.db files of the key pair get the same rows that the HTTP API cannot create,
written by upstream's own SessionDB: the oracle's `seed_state.py` scenarios plus a few extra
sessions (preview edge cases, a multimodal transcript, a fork source with messages,
an untagged child), see `oracle_seed.py` (run under the oracle's Python).

Then every step goes to the oracle, then to hermes-server, in the same order. Answers are
compared on status, Content-Type, the `Allow` header, whether the security headers are
present, and the exact body bytes after normalisation (`masks.BodyBytes`): timestamps become
`<ts>`, generated ids (`api_<secs>_<8 hex>`) `<gen-N>` in order of first appearance on each side.

A step may declare an expected deviation (docs/differences.md) and hermes-server's own answer
for it; such differences are counted separately and the declared answer is checked too. The
exit status is 0 only when there is no unexpected difference.
"""

from __future__ import annotations

import subprocess
import sys
from collections import Counter
from pathlib import Path

from hermes_server.contract.suites import BY_NAME
from hermes_server.contract.wire import exchange, local
from oracle_common import KEY, ORACLE_DIR, ORACLE_PY, Workbench, command_line, judge, played, rebased, side

# Three pairs of servers: with the key, without any key, and over a state.db that cannot be opened.
PORTS = rebased({("oracle", "key"): 18800, ("oracle", "nokey"): 18802, ("oracle", "broken"): 18804,
                 ("ours", "key"): 18810, ("ours", "nokey"): 18811, ("ours", "broken"): 18812})


# -- seeding ----------------------------------------------------------------------


def seed(home: Path) -> None:
    """Write the same upstream-made rows into one home (the server there must already have opened it)."""
    for cmd in ([str(ORACLE_PY), str(ORACLE_DIR / "seed_state.py"), str(home), "--prefix", "sd"],
                [str(ORACLE_PY), str(Path(__file__).resolve().parent / "oracle_seed.py"), str(home)]):
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
        if out.returncode != 0:
            raise SystemExit(f"seeding {home} failed:\n{out.stderr}")


def run(verbose: bool, keep: bool, quirks: bool = False) -> int:
    with Workbench("hs-oracle-diff-", keep) as bench:
        homes: dict[tuple[str, str], Path] = {}
        for (where, pair), port in PORTS.items():
            name = f"{where}-{pair}"
            if pair == "broken":
                # A directory where state.db should be: SQLite cannot open it, on either side.
                (bench.home(name) / "state.db").mkdir(parents=True)
            if where == "oracle":
                homes[where, pair] = bench.oracle(name, port, no_key=pair == "nokey")
            else:
                homes[where, pair] = bench.ours(name, port, no_key=pair == "nokey",
                                                extra=["--upstream-quirks"] if quirks else [])
        # Let each server create its state.db, then seed both the same way.
        for where in ("oracle", "ours"):
            exchange(local(PORTS[where, "key"]), "GET", "/api/sessions", headers=[("Authorization", f"Bearer {KEY}")])
            seed(homes[where, "key"])
        oracle, ours = ({(pair, "fast"): port for (w, pair), port in PORTS.items() if w == where}
                        for where in ("oracle", "ours"))
        sessions = played(BY_NAME["sessions"], side("oracle", oracle), side("ours", ours))
        tally = judge(sessions, quirks, verbose)
        per_pair = Counter(item.step.pair for item in sessions)
        total = len(sessions)
        unexpected, wrong, unexercised = tally["unexpected"], tally["wrong"], tally["unexercised"]
        print(f"\n{total} requests: {tally['same']} identical, {tally['expected']} expected differences (declared deviations), "
              f"{unexpected} unexpected differences, {wrong} deviations answered otherwise than declared, "
              f"{unexercised} declared deviations not observed")
        print("by server pair: " + ", ".join(f"{pair} {n}" for pair, n in per_pair.items()))
        deviations = sorted((key.split()[1], n) for key, n in tally.items() if key.startswith("expected "))
        print("expected differences: " + (", ".join(f"{d} x{n}" for d, n in deviations) or "none"))
        probes = played(BY_NAME["probes"], side("oracle", oracle), side("ours", ours))
        probed = judge(probes, quirks, verbose)
        print(f"{len(probes)} read probes (discovery, newer releases' routes): {probed['same']} identical, "
              f"{len(probes) - probed['same']} different")
        failed = unexpected + wrong + unexercised + len(probes) - probed["same"]
        return 0 if failed == 0 else 1


def main() -> int:
    args = command_line(__doc__).parse_args()
    return run(args.verbose, args.keep, args.upstream_quirks)


if __name__ == "__main__":
    sys.exit(main())
