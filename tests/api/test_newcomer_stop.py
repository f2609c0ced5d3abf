"""A stop is not an error, however many times it is asked for.

A second Ctrl-C during a slow shutdown (a chat turn in flight) once printed uvicorn's
"Exception in 'lifespan' protocol" with a CancelledError traceback: the forced exit skipped
the lifespan shutdown, and the loop's end cancelled the app's wait for it.
"""

from __future__ import annotations

import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import httpx
import pytest

from tests.support.server import clean_env

# A server process per test (start-up, exit status, shutdown): left out of make test-fast.
pytestmark = pytest.mark.slow


def wait_serving(proc: subprocess.Popen[str], port: int) -> None:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            if httpx.get(f"http://127.0.0.1:{port}/health", timeout=1).status_code == 200:
                return
        except httpx.HTTPError:
            time.sleep(0.1)
    proc.kill()
    pytest.fail("the server did not start")


def chat(port: int) -> None:
    try:
        httpx.post(f"http://127.0.0.1:{port}/v1/chat/completions", timeout=30,
                   json={"model": "x", "messages": [{"role": "user", "content": "hi"}]})
    except httpx.HTTPError:
        pass


@pytest.mark.parametrize(("port", "grace", "second_after"), [
    (19661, "5", 0.5),    # the second Ctrl-C while uvicorn waits for the chat's connection
    (19662, "0.2", 1.0),  # the second Ctrl-C while the lifespan drains the chat turn
])
def test_a_second_ctrl_c_during_a_slow_shutdown_is_no_error(tmp_path: Path, port: int, grace: str,
                                                            second_after: float) -> None:
    proc = subprocess.Popen([sys.executable, "-m", "hermes_server", "serve", "--home", str(tmp_path / "h"),
                             "--no-auth", "--port", str(port), "--agent-delay", "4", "--shutdown-grace", grace],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=clean_env())
    wait_serving(proc, port)
    client = threading.Thread(target=chat, args=(port,))
    client.start()
    time.sleep(0.7)  # the turn is running
    proc.send_signal(signal.SIGINT)
    time.sleep(second_after)
    proc.send_signal(signal.SIGINT)
    out, _ = proc.communicate(timeout=30)
    client.join(timeout=30)
    assert "Traceback" not in out and "Exception in 'lifespan'" not in out, out
    assert proc.returncode == 0, out
