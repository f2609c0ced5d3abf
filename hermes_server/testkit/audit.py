"""The audit as the kit reads it: `GET /_fixture/audit` parsed into findings, and the failure text.

The server grades the journal (every rule is the server's, docs/testing-connectors.md lists
them); the kit only parses the answer and decides what fails a test: an error finding does,
a warning does not (it is listed after the errors, so a failing test shows it too).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Literal, Protocol

AUDIT = "/_fixture/audit"
Severity = Literal["error", "warning"]


@dataclass(frozen=True)
class Finding:
    """One thing the connector sent that the contract says it should not have."""

    rule: str  # the rule id, e.g. "unsafe-replay"
    severity: Severity
    message: str  # what the connector should have done instead
    requests: tuple[int, ...]  # the journal seqs that show it (`RequestRecord.seq`)
    session_id: str | None

    @property
    def error(self) -> bool:
        return self.severity == "error"

    def describe(self) -> str:
        """One line: rule, journal seqs, session, message (no body: bodies carry transcript text)."""
        seqs = ", ".join(f"#{seq}" for seq in self.requests) or "no request"
        session = f" session {self.session_id!r}" if self.session_id is not None else ""
        return f"{self.rule} ({self.severity}) at {seqs}{session}: {self.message}"


@dataclass(frozen=True)
class Audit:
    """The audit of the journal since the last reset: how many entries it checked, what it found.

    Iterating it (and `len`) gives the findings, in the server's order."""

    checked: int
    findings: tuple[Finding, ...]

    @property
    def errors(self) -> tuple[Finding, ...]:
        return tuple(f for f in self.findings if f.error)

    @property
    def warnings(self) -> tuple[Finding, ...]:
        return tuple(f for f in self.findings if not f.error)

    @property
    def clean(self) -> bool:
        """No error finding (warnings do not make an audit unclean)."""
        return not self.errors

    def __iter__(self) -> Iterator[Finding]:
        return iter(self.findings)

    def __len__(self) -> int:
        return len(self.findings)

    def describe(self) -> str:
        """Every finding, errors first, one per line; for a report section and for assertion messages."""
        lines = [f"  {f.describe()}" for f in (*self.errors, *self.warnings)]
        head = f"{len(self.errors)} error(s), {len(self.warnings)} warning(s) in {self.checked} journal entries"
        return "\n".join([head, *lines]) if lines else f"clean: no finding in {self.checked} journal entries"


def parse_audit(reply: dict[str, Any]) -> Audit:
    findings = tuple(Finding(item["rule"], item["severity"], item["message"], tuple(item["requests"]),
                             item.get("session_id")) for item in reply["findings"])
    return Audit(reply["checked"], findings)


def unclean(audit: Audit) -> AssertionError | None:
    """The AssertionError an audit with error findings stands for, or None when it is clean."""
    if audit.clean:
        return None
    return AssertionError(f"the audit of the connector's traffic has error findings "
                          f"(docs/testing-connectors.md, the audit):\n{audit.describe()}")


class Auditable(Protocol):
    """A control client (`FixtureClient`): all `audit_each` asks of one."""

    def audit(self) -> Audit: ...


def audit_each(controls: Mapping[str, Auditable]) -> tuple[list[tuple[str, Audit | str]], str | None]:
    """Each named server's audit (or why it could not be read), and the failure text when one has
    an error finding or could not be audited (a server without `--fixture-api`, say)."""
    audits: list[tuple[str, Audit | str]] = []
    failures = []
    for name, control in controls.items():
        try:
            audit = control.audit()
        except Exception as exc:  # noqa: BLE001 - an unreadable audit fails the test, saying why
            audits.append((name, f"(audit not readable: {exc})"))
            failures.append(f"hermes_audit: {name}: the audit could not be read: {exc}")
            continue
        audits.append((name, audit))
        failure = unclean(audit)
        if failure is not None:
            failures.append(f"hermes_audit: {name}: {failure}")
    return audits, "\n".join(failures) or None
