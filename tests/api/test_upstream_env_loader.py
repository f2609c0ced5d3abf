"""hermes-agent 0.19.0's own loader of `$HERMES_HOME/.env` and ours give the environment the same values.

Upstream's `load_hermes_dotenv` (hermes_cli/env_loader.py) runs in its venv on a copy of each home;
ours on another copy; with the same shell environment, every variable comes out the same, so the
precedence (the home's file over the shell's exports) is upstream's, not a reading of its source.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from hermes_server.cli import envfile
from tests.support.server import clean_env
from tests.support.upstream import upstream_bin

pytestmark = pytest.mark.interop

SHELL = {"API_SERVER_KEY": "stale-shell-key-0123456789abcdef", "API_SERVER_PORT": "9000", "FROM_SHELL": "kept"}
HOMES = {
    "exports": "export API_SERVER_KEY='home-key-0123456789abcdef'\nAPI_SERVER_HOST=0.0.0.0 # all interfaces\n",
    "quotes-and-references": 'API_SERVER_KEY="k-${FROM_SHELL}-0123456789abcdef"\nAPI_SERVER_MODEL_NAME=${NOPE:-m1}\n'
                             "API_SERVER_CORS_ORIGINS='*'\n",
    "declared-only": "API_SERVER_KEY\nAPI_SERVER_PORT=\n",
    "multiline": 'HERMES_SERVER_LOG_FORMAT="json"\nNOTE="two\nlines"\n',
}
WATCHED = [*SHELL, "API_SERVER_HOST", "API_SERVER_MODEL_NAME", "API_SERVER_CORS_ORIGINS", "HERMES_SERVER_LOG_FORMAT",
           "NOTE"]

UPSTREAM = """
import json, os, sys
from hermes_cli.env_loader import load_hermes_dotenv
load_hermes_dotenv(hermes_home=sys.argv[1])
print(json.dumps({name: os.environ.get(name) for name in json.loads(sys.argv[2])}))
"""


@pytest.mark.parametrize("text", list(HOMES.values()), ids=list(HOMES))
def test_the_home_env_gives_what_upstreams_loader_gives(tmp_path: Path, text: str) -> None:
    theirs_home, ours_home = tmp_path / "upstream" / "home", tmp_path / "ours" / "home"
    theirs_home.mkdir(parents=True)
    (theirs_home / ".env").write_text(text)
    shutil.copytree(theirs_home, ours_home)
    done = subprocess.run([str(upstream_bin()), "-c", UPSTREAM, str(theirs_home), json.dumps(WATCHED)],
                          capture_output=True, text=True, timeout=120, cwd=tmp_path,
                          env=clean_env(HOME=str(tmp_path / "upstream"), HERMES_HOME=str(theirs_home), **SHELL))
    assert done.returncode == 0, done.stderr
    theirs = json.loads(done.stdout.strip().splitlines()[-1])
    environ = dict(SHELL)
    envfile.load(ours_home, environ)
    assert {name: environ.get(name) for name in WATCHED} == theirs
