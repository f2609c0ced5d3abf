"""The report of a `verify` run: the same data as a table for people and as JSON for CI.

Sections (docs/verify.md says what each means): what was checked (the target, what its
`/health` claims, the profile and why, the mode, the prefix), the drift table (behaviour,
what the profile answers, what the target answered, what explains it), the releases the
target answers like, coverage (steps played and not, and why; deviations reachable), cleanup,
and the result line whose count is the exit status's reason.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from hermes_server.contract.masks import ANYTHING, Keys, parsed_form
from hermes_server.contract.rows import DEVIATIONS
from hermes_server.contract.steps import Need
from hermes_server.contract.verify import Finding, Outcome, Reference

CELL = 64  # characters of an answer shown in a table cell (the JSON report has them whole)


@dataclass
class Run:
    """What a run was asked and found, for the report."""

    target: str
    claims: str | None  # the version the target's /health names
    profile: str
    why: str  # how the profile was chosen
    mode: list[str]
    prefix: str
    references: list[Reference]
    outcome: Outcome
    created: dict[str, int] = field(default_factory=dict)
    not_removed: list[str] = field(default_factory=list)
    # The name docs/api.md gives the operation a step sent (method, path), None for a path no route serves.
    operation: Callable[[str, str], str | None] = lambda method, path: None

    def behaviour(self, finding: Finding) -> str:
        """A drift's behaviour: the operation as docs/api.md names it, then what the step shows."""
        name = self.operation(finding.step.method, finding.step.path)
        return f"{name}: {finding.step.behaviour}" if name else finding.step.behaviour

    @property
    def drift(self) -> list[Finding]:
        return self.outcome.findings

    @property
    def unexplained(self) -> list[Finding]:
        return [finding for finding in self.drift if not finding.explained]

    def exit_status(self) -> int:
        return 1 if self.drift else 0


def explanation(finding: Finding) -> str:
    """What explains a drift, in one cell: the deviation, the release rows, or what it answers like."""
    parts = []
    if finding.deviation:
        parts.append(f"{finding.deviation}: {DEVIATIONS[finding.deviation].behaviour}")
    for row in finding.rows:
        parts.append(f"{row.since or 'a newer release'} row: {row.behaviour}")
    if not parts and finding.answers_like:
        parts.append("answers like hermes-server " + ", ".join(ref.name for ref in finding.answers_like)
                     + " (no row names it)")
    if not finding.explained:
        return "UNEXPLAINED" + (f" (closest: {'; '.join(parts)})" if parts else "")
    return "; ".join(parts)


def _plain(value: Any) -> Any:
    """A form as JSON can hold it (shapes hold sets and placeholders)."""
    if value is ANYTHING:
        return "<any>"
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, Keys):
        return {"keys": list(value)}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, frozenset):
        return sorted((_plain(v) for v in value), key=json.dumps)
    return value


def _dig(form: Any, path: tuple[Any, ...]) -> Any:
    for part in path:
        if isinstance(form, dict):
            form = form.get(part)
        elif isinstance(form, (list, tuple)) and isinstance(part, int) and part < len(form):
            form = form[part]
        else:
            return None
    return form


def cell(form: Any, finding: Finding) -> str:
    """An answer cut to what differs: its status, then each differing field (first few)."""
    parsed = parsed_form(form)
    status = parsed.get("status") if isinstance(parsed, dict) else None
    pieces = [str(status)] if status is not None else []
    for path in sorted(finding.difference.paths, key=str)[:3]:
        if path == ("status",):
            continue
        value = _dig(parsed, path)
        shown = value if isinstance(value, str) else json.dumps(_plain(value), ensure_ascii=False)
        label = ".".join(str(p) for p in path[-2:]) if path else "answer"
        pieces.append(f"{label}={shown}")
    text = " ".join(pieces).replace("\n", " ").replace("|", "\\|")
    return text if len(text) <= CELL else text[:CELL - 1] + "…"


def text(run: Run) -> str:
    """The report for a person: each section, the drift as a Markdown table."""
    o = run.outcome
    lines = [f"hermes-server verify {run.target}",
             f"  the target's /health says: {run.claims or 'no version'}",
             f"  profile: {run.profile} ({run.why})",
             "  compared with: hermes-server " + ", ".join(ref.name for ref in run.references)
             + " (in process, fresh homes)",
             f"  mode: {' '.join(run.mode) or 'read-only'}; everything created is named {run.prefix}…",
             "  model: " + ("a real model: its words and token counts are never compared" if o.real_model else
                            "no turn, or a deterministic mock: what each turn's model saw is compared, never its words"),
             ""]
    header = f"| behaviour | step | {run.profile} answers | target answered | explained by |"
    lines += [f"drift: {len(run.drift)}", "", header, "|---|---|---|---|---|"] if run.drift else ["drift: none", ""]
    for finding in run.drift:
        lines.append(f"| {run.behaviour(finding)} | {finding.suite}: {finding.step.name} | "
                     f"{cell(finding.profile_form, finding)} | {cell(finding.target_form, finding)} | "
                     f"{explanation(finding)} |")
    lines += [""] + _releases(run) + [""] + _coverage(run) + [""] + _cleanup(run) + ["", result_line(run)]
    return "\n".join(lines)


def answers_like(run: Run) -> tuple[str, int] | None:
    """The release the target answers like where its profile answers otherwise (the one matching
    most such steps, the newer on a tie), and on how many; None when there is none."""
    like = Counter(version for finding in run.drift for version in finding.releases)
    if not like:
        return None
    return max(like.items(), key=lambda item: (item[1], _version(item[0])))


def _version(version: str) -> tuple[int, ...]:
    return tuple(int(part) for part in version.split(".") if part.isdigit())


def _releases(run: Run) -> list[str]:
    best = answers_like(run)
    if best is None:
        return [f"releases: the target answers like {run.profile} wherever another release would differ"]
    version, count = best
    claim = "its /health claims" if run.claims == run.profile else "the profile holds it to"
    others = Counter(v for finding in run.drift if version in finding.releases for v in finding.releases
                     if v != version)
    rows = sorted({row.behaviour for finding in run.drift if finding.releases for row in finding.rows})
    out = [f"releases: the target answers like {version}, not {run.profile} as {claim}, on {count} step(s)"
           + "".join(f" ({other} alike on {n} of them)" for other, n in sorted(others.items())),
           "  rows of docs/versions.md it shows:"]
    out += [f"    {row}" for row in rows] or ["    none named"]
    return out


def _coverage(run: Run) -> list[str]:
    o = run.outcome
    played = ", ".join(f"{suite} {n}" for suite, n in o.played.items())
    out = [f"coverage: {sum(o.played.values())} steps played ({played})"]
    for need, count in sorted(o.skipped.items(), key=lambda item: list(Need).index(item[0])):
        out.append(f"  not played: {count} step(s) need {need.value}")
    reached = sorted(o.deviations_reachable, key=lambda row: int(row[1:]))
    unreached = [row for row in DEVIATIONS if row not in o.deviations_reachable]
    out.append("  deviations its steps can show: " + (", ".join(reached) or "none")
               + (f"; not reachable in this run: {', '.join(unreached)}" if unreached else ""))
    return out


def _cleanup(run: Run) -> list[str]:
    made = ", ".join(f"{n} {kind}" for kind, n in run.created.items() if n) or "nothing"
    if not run.not_removed:
        return [f"cleanup: created {made}; all of it removed"]
    return [f"cleanup: created {made}; could not remove {len(run.not_removed)}:"] + \
        [f"  {line}" for line in run.not_removed]


def result_line(run: Run) -> str:
    if not run.drift:
        return "result: no drift"
    named = Counter(f.deviation for f in run.drift if f.explained and f.deviation)
    rows = sum(1 for f in run.drift if f.explained and f.rows)
    parts = [", ".join(f"{row} x{n}" for row, n in sorted(named.items(), key=lambda i: int(i[0][1:])))] if named else []
    if rows:
        parts.append(f"{rows} by release rows")
    return (f"result: {len(run.drift)} drift ({len(run.drift) - len(run.unexplained)} explained"
            + (f": {'; '.join(parts)}" if parts else "") + f"; {len(run.unexplained)} unexplained)")


def as_json(run: Run) -> dict[str, Any]:
    """The same data for CI."""
    o = run.outcome
    return {
        "target": run.target, "claims": run.claims, "profile": run.profile, "profile_reason": run.why,
        "references": [{"version": ref.version, "upstream_quirks": ref.quirks} for ref in run.references],
        "mode": run.mode, "prefix": run.prefix, "real_model": o.real_model,
        "drift": [{
            "suite": f.suite, "step": f.step.name, "behaviour": f.step.behaviour,
            "operation": run.operation(f.step.method, f.step.path),
            "request": {"method": f.step.method, "path": f.step.path},
            "profile_answers": _plain(parsed_form(f.profile_form)), "target_answered": _plain(parsed_form(f.target_form)),
            "differs_at": sorted((list(map(str, path)) for path in f.difference.paths), key=json.dumps),
            "deviation": {"row": f.deviation, "behaviour": DEVIATIONS[f.deviation].behaviour} if f.deviation else None,
            "release_rows": [{"behaviour": row.behaviour, "since": row.since, "unit": row.unit.value if row.unit else None}
                             for row in f.rows],
            "answers_like": [{"version": ref.version, "upstream_quirks": ref.quirks} for ref in f.answers_like],
            "explained": f.explained,
        } for f in run.drift],
        "answers_like": dict(Counter(version for f in run.drift for version in f.releases)),
        "coverage": {"played": dict(o.played), "not_played": {need.name.lower(): n for need, n in o.skipped.items()},
                     "deviations_reachable": sorted(o.deviations_reachable, key=lambda row: int(row[1:]))},
        "cleanup": {"created": run.created, "not_removed": run.not_removed},
        "result": {"drift": len(run.drift), "explained": len(run.drift) - len(run.unexplained),
                   "unexplained": len(run.unexplained), "exit": run.exit_status()},
    }
