"""`verify`: the corpus played against a live server and against hermes-server references, judged.

Every step the run may send (its needs met) goes to the target, then to each reference:
hermes-server in process on a fresh home, for every served release, bug-for-bug
(`--upstream-quirks`) and as served (its deviations on). A step whose target answer equals
the chosen profile's bug-for-bug reference is no drift. Any other is drift, explained by
what the target answers like: hermes-server's own deviation (the row the step names, D1-D11),
another release (the rows of docs/versions.md the difference shows), or nothing (unexplained).
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from hermes_server.contract.masks import Normaliser, by_shape
from hermes_server.contract.play import Played, Shaped, Side, play, shape, without_body
from hermes_server.contract.rows import Difference, ReleaseRow, release_rows
from hermes_server.contract.steps import Need, Step
from hermes_server.contract.suites import Suite
from hermes_server.contract.wire import Answer

# Values that come from a server's configuration, not from the contract: masked in every answer.
CONFIG_KEYS = frozenset({"model_snapshot", "provider_snapshot", "cors"})
# With a real model: its words, and the model it names, are never compared.
TEXT_KEYS = frozenset({"content", "delta", "text", "output_text", "preview", "reasoning", "reasoning_content",
                       "final_response", "output", "model", "title", "instructions"})


@dataclass(frozen=True)
class Reference:
    """One hermes-server the target is compared with: a release, bug-for-bug or as served."""

    version: str
    quirks: bool

    @property
    def name(self) -> str:
        return f"{self.version}{' bug-for-bug' if self.quirks else ''}"


@dataclass
class Finding:
    """One step whose target answer differs from the profile's."""

    suite: str
    step: Step
    profile_form: Any
    target_form: Any
    difference: Difference
    answers_like: list[Reference]
    deviation: str | None  # the row of docs/differences.md that explains it, when one does
    releases: list[str]  # the releases (other than the profile's) the target answers like here
    rows: list[ReleaseRow]  # the rows of docs/versions.md the difference shows

    @property
    def explained(self) -> bool:
        """Whether what the target answers like is named: hermes-server's deviation where it answers only
        as a reference serving its deviations does, the release rows where it answers as another release."""
        if not self.answers_like:
            return False
        if all(not ref.quirks for ref in self.answers_like) and self.deviation is None:
            return False
        return not self.releases or bool(self.rows)


@dataclass
class Outcome:
    """Everything a run found."""

    played: Counter[str] = field(default_factory=Counter)  # steps per suite
    skipped: Counter[Need] = field(default_factory=Counter)  # steps not sent, by the first need not met
    findings: list[Finding] = field(default_factory=list)
    deviations_reachable: set[str] = field(default_factory=set)
    real_model: bool = False


def reachable(step: Step, met: frozenset[Need]) -> Need | None:
    """The first need of `step` this run does not meet (None: it is played)."""
    missing = sorted(step.needs - met, key=lambda need: list(Need).index(need))
    return missing[0] if missing else None


# What the deterministic agents say (upstream's mock model, hermes-server's echo and script agents).
_MOCK_WORDS = re.compile(rb"(MOCK|ECHO)-REPLY|TOOL-DONE")


def real_model(played: Iterable[Played], target: str) -> bool:
    """Whether the target's agent is a real model: it took turns, and none answered like a mock."""
    turns = [item.answers[target] for item in played if Need.CHAT in item.step.needs
             and 200 <= item.answers[target].status < 300]
    return bool(turns) and not any(_MOCK_WORDS.search(answer.body) for answer in turns)


def masked(value: Any, keys: frozenset[str], key: str | None = None) -> Any:
    """`value` with whatever sits under `keys` (a null, a list included) replaced by a placeholder."""
    if key in keys:
        return f"<{key}>"
    if isinstance(value, dict):
        return {k: masked(v, keys, k) for k, v in value.items()}
    if isinstance(value, list):
        return [masked(v, keys) for v in value]
    if isinstance(value, tuple):
        return tuple(masked(v, keys) for v in value)
    return value


def rows_masked(value: Any, key: str | None = None) -> Any:
    """Integer `id`s (message rows) as `<row>`: a server that has been used numbers them its own way."""
    if isinstance(value, dict):
        return {k: rows_masked(v, k) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(rows_masked(v) for v in value)
    if key == "id" and isinstance(value, int) and not isinstance(value, bool):
        return "<row>"
    return value


_ROW_ID = re.compile(r'"id": \d+')


def view(step: Step, answer: Answer, normalise: Normaliser, *, text: bool) -> Any:
    """An answer as verify compares it: a listing's 2xx answer by shape (what else the server holds
    never reaches the normaliser), message row ids and configuration masked, and with a real model
    (`text`), its words masked."""
    if step.listing and 200 <= answer.status < 300:
        form = by_shape(normalise(without_body(answer)), answer)
    else:
        form = normalise(answer)
    if isinstance(form, dict) and isinstance(form.get("body"), str):
        form = {**form, "body": _ROW_ID.sub('"id": "<row>"', form["body"])}
    form = rows_masked(form)
    if isinstance(form, dict) and isinstance(form.get("body"), str) and form["body"].startswith("{"):
        try:
            body = json.loads(form["body"])
        except ValueError:
            body = None
        if isinstance(body, dict) and (_has(body, CONFIG_KEYS) or text):
            form = {**form, "body": body}
    form = masked(form, CONFIG_KEYS)
    return masked(form, TEXT_KEYS) if text else form


def _has(value: Any, keys: frozenset[str]) -> bool:
    if isinstance(value, dict):
        return any(k in keys or _has(v, keys) for k, v in value.items())
    if isinstance(value, list):
        return any(_has(v, keys) for v in value)
    return False


def judge(suite: Suite, shaped: Sequence[Shaped], target: str, profile: Reference,
          references: Sequence[Reference]) -> list[Finding]:
    """The drift of one suite: every kept step whose target form differs from the profile's."""
    findings = []
    for item in shaped:
        forms = item.shapes
        ours = forms[profile.name]
        theirs = forms[target]
        if theirs == ours:
            continue
        like = [ref for ref in references if forms[ref.name] == theirs]
        # As served by the profile's own release: its deviation. Else another release, perhaps as served.
        own = [ref for ref in like if ref.version == profile.version]
        releases = [] if own else sorted({ref.version for ref in like})
        served = [ref for ref in (own or like) if not ref.quirks and Reference(ref.version, True) not in like]
        deviation = item.step.deviation if served else None
        difference = Difference.of(ours, theirs)
        rows = release_rows(item.step, difference) if releases or not like else []
        findings.append(Finding(suite.name, item.step, ours, theirs, difference, like, deviation, releases, rows))
    return findings


def run(suites: Sequence[Suite], steps_of: Callable[[Suite], list[Step]], target: Side,
        references: Mapping[Reference, Side], profile: Reference, met: frozenset[Need],
        on_suite: Callable[[Suite, int], None] | None = None) -> Outcome:
    """Play every suite's reachable steps on the target and the references; judge each suite."""
    outcome = Outcome()
    sides = [target, *references.values()]
    for suite in suites:
        steps = []
        for step in steps_of(suite):
            missing = reachable(step, met)
            if missing is None:
                steps.append(step)
            else:
                outcome.skipped[missing] += 1
        if on_suite is not None:
            on_suite(suite, len(steps))
        outcome.played[suite.name] += len(steps)
        outcome.deviations_reachable |= {step.deviation for step in steps if step.deviation}
        if not steps:
            continue
        answers = play(steps, sides, parallel=True)
        text = real_model(answers, target.name)
        outcome.real_model = outcome.real_model or text
        shaped = shape(answers, {side.name: suite.normaliser() for side in sides}, partial(view, text=text))
        outcome.findings += judge(suite, shaped, target.name, profile, list(references))
    return outcome

