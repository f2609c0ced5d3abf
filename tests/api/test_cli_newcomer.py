"""The command line as a newcomer meets it: a bare command, a misspelt option, the lines it prints.

Each of these once misled: `hermes-server` alone printed help and exited 0 (a script took it
for success), `serve --prot 9000` said only "unrecognized arguments", `seed` reported
"1 sessions", and the start-up line of `--upstream-quirks` did not say that the answers
that follow are 0.19.0's failures on purpose.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from hermes_server.cli import main
from tests.support.server import clean_env, start_server


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "hermes_server", *args], capture_output=True, text=True,
                          timeout=60, env=clean_env())


def fixture(tmp_path: Path, sessions: int) -> Path:
    path = tmp_path / "f.json"
    path.write_text(json.dumps({"sessions": [
        {"id": f"s{i}", "messages": [{"role": "user", "content": "hi"}]} for i in range(sessions)]}))
    return path


def test_no_command_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    assert main([]) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert err.startswith("usage: hermes-server") and "serve" in err and "seed" in err
    assert err.rstrip().splitlines()[-1] == "hermes-server: error: name a command, e.g. `hermes-server serve`"


def test_the_bare_command_exits_2() -> None:
    done = run()
    assert done.returncode == 2 and done.stdout == ""


@pytest.mark.parametrize(("argv", "hint"), [
    (["serve", "--prot", "9000"], "(--prot: did you mean --port?)"),
    (["serve", "--prot=9000"], "(--prot: did you mean --port?)"),
    (["serve", "--api-kee", "k", "--hots", "0.0.0.0"], "(--api-kee: did you mean --api-key?; --hots: did you mean --host?)"),
    (["seed", "f.json", "--hoem", "h"], "(--hoem: did you mean --home?)"),
    (["healthcheck", "--raedy"], "(--raedy: did you mean --ready?)"),
])
def test_a_misspelt_option_names_the_closest_one(argv: list[str], hint: str,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as refused:
        main(argv)
    assert refused.value.code == 2
    last = capsys.readouterr().err.rstrip().splitlines()[-1]
    assert last.startswith(f"hermes-server {argv[0]}: error: unrecognized arguments: ")
    assert last.endswith(hint)


def test_an_unknown_option_like_no_other_gets_no_guess(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["serve", "--zzzzzz"])
    assert capsys.readouterr().err.rstrip().endswith("error: unrecognized arguments: --zzzzzz")


@pytest.mark.parametrize(("sessions", "said"), [
    (1, "1 session, 1 message (state.db now holds 1 session)"),
    (2, "2 sessions, 2 messages (state.db now holds 2 sessions)"),
])
def test_seed_counts_in_english(tmp_path: Path, sessions: int, said: str) -> None:
    done = run("seed", str(fixture(tmp_path, sessions)), "--home", str(tmp_path / "h"))
    assert done.returncode == 0, done.stderr
    assert done.stdout.rstrip().endswith(said)


def test_start_up_lines_say_quirks_are_on_and_count_in_english(tmp_path: Path) -> None:
    server = start_server(tmp_path / "h", "--upstream-quirks", "--fixture", str(fixture(tmp_path, 1)))
    try:
        log = server.log()
    finally:
        server.stop()
    serving = next(line for line in log.splitlines() if "serving http://" in line)
    assert "upstream quirks ON: answering as hermes-agent 0.19.0 does" in serving
    assert "loaded fixture" in log and "1 session, 1 message" in log and "1 sessions" not in log


def test_without_quirks_the_start_up_line_says_nothing_of_them(tmp_path: Path) -> None:
    server = start_server(tmp_path / "h")
    try:
        log = server.log()
    finally:
        server.stop()
    assert "upstream quirks" not in next(line for line in log.splitlines() if "serving http://" in line)
