"""A dialect's options without its switch are refused, by flag or by environment alike.

`--herm-run-key` (and the other `--herm-run-*` options) without `--herm-run` was once accepted
and ignored without a word: a user believed the dialect's key was set while nothing was served.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from hermes_server.cli.options import Option, text
from hermes_server.families import Dialect, Family
from tests.support.server import clean_env

# A server process per test (start-up, exit status, shutdown): left out of make test-fast.
pytestmark = pytest.mark.slow

KEY = "hr-key-0123456789"


@pytest.mark.parametrize(("argv", "env", "named"), [
    (["--herm-run-key", KEY], {}, "--herm-run-key"),
    (["--herm-run-allowance", "3"], {}, "--herm-run-allowance"),
    (["--herm-run-window", "5"], {}, "--herm-run-window"),
    ([], {"HERMES_SERVER_HERM_RUN_KEY": KEY}, "HERMES_SERVER_HERM_RUN_KEY"),
    (["--herm-run-allowance", "3"], {"HERMES_SERVER_HERM_RUN_WINDOW": "5"},
     "--herm-run-allowance, HERMES_SERVER_HERM_RUN_WINDOW"),
])
def test_a_dialect_option_without_its_switch_is_refused(tmp_path: Path, argv: list[str], env: dict[str, str],
                                                        named: str) -> None:
    done = subprocess.run([sys.executable, "-m", "hermes_server", "serve", "--home", str(tmp_path / "h"),
                           "--port", "19652", "--no-auth", *argv], capture_output=True, text=True, timeout=60,
                          env={**clean_env(), **env})
    assert done.returncode == 2
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert f"refusing to start: {named} given without --herm-run" in lines[0]
    assert KEY not in done.stderr  # where it came from, never the key
    assert not (tmp_path / "h").exists()


def test_the_switch_on_by_environment_lets_them_through(monkeypatch: pytest.MonkeyPatch) -> None:
    from hermes_server.cli.main import build_parser
    from hermes_server.cli.serve import settings_from_args

    for name in ("HERMES_SERVER_HERM_RUN_KEY", "HERMES_SERVER_HERM_RUN_ALLOWANCE", "HERMES_SERVER_HERM_RUN_WINDOW"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HERMES_SERVER_HERM_RUN", "1")
    args = build_parser().parse_args(["serve", "--herm-run-allowance", "3", "--no-auth"])
    settings, _ = settings_from_args(args)
    assert settings.extras["herm_run"] is True and settings.extras["herm_run_allowance"] == 3


def test_the_rule_is_the_dialect_units_own() -> None:
    options = (Option("x", "--x", "X_ON", False, text, "x", switch=True), Option("x_y", "--x-y", "X_Y", None, text, "y"))

    def build(settings: object, make_db: object) -> Family:
        raise AssertionError

    unit = Dialect("x", options, "x", "x", switch="x", build=build)  # type: ignore[arg-type]
    assert unit.refusal_when_off({"x": None, "x_y": None}, on=False) is None
    assert unit.refusal_when_off({"x": "--x", "x_y": "--x-y"}, on=True) is None
    assert unit.refusal_when_off({"x": None, "x_y": "X_Y"}, on=False) == (
        "refusing to start: X_Y given without --x (env X_ON=1): x is not served, so it would do nothing")
