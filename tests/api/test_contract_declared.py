"""The corpus's declared answers, held without the oracle: hermes-server answers every step of the
session routes' scenarios that names a deviation exactly as the step declares (D1, D3-D6, D11).

`tools/oracle_diff.py` checks the same declarations beside upstream 0.19.0; this plays the steps
hermes-server alone can answer (no rows seeded by upstream's SessionDB, the server with a key) in
the corpus's order, on a fresh home, in CI.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from hermes_server.contract import sessions
from hermes_server.contract.masks import decoded_body
from hermes_server.contract.play import Side, play
from hermes_server.contract.steps import Names, Need
from hermes_server.contract.wire import local
from tests.support.server import KEY, start_server

pytestmark = pytest.mark.in_process


def test_each_declared_deviation_is_answered_as_declared(tmp_path: Path) -> None:
    server = start_server(tmp_path / "home")
    try:
        steps = [step for step in sessions.scenarios(Names()) if step.pair == "key" and Need.SEEDED not in step.needs]
        played = play(steps, [Side("ours", {("key", "fast"): local(server.port)}, {"key": KEY})])
    finally:
        server.stop()
    declared = [(item.step, item.answers["ours"]) for item in played if item.step.declared is not None]
    assert {step.deviation for step, _ in declared} == {"D1", "D3", "D4", "D5", "D6", "D11"}
    wrong = [f"{step.name}: {(answer.status, decoded_body(answer.body))}" for step, answer in declared
             if (answer.status, decoded_body(answer.body)) != step.declared]
    assert wrong == []
