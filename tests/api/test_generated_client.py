"""A client generated from /openapi.json works: openapi-python-client, on each profile's document.

The document is "for client generators", so a generator users run on it must produce, without a
warning, a client whose request models are typed and whose calls work. For every profile this
generates the client from the document a real server (a subprocess) serves, imports it, and drives
the session routes through it: create, list, get, patch, chat (text, and content parts), the
messages, fork (and the first close that fork's close wins over), delete and the 404 after it,
checking each answer as the generated models parse it.
"""

from __future__ import annotations

import importlib
import subprocess
import sys
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

import httpx
import pytest

from hermes_server.domain.profiles import PROFILES
from tests.support.server import RunningServer, start_server

pytestmark = pytest.mark.slow

GENERATOR = Path(sys.executable).with_name("openapi-python-client")
# No formatting afterwards: the hooks run ruff on the generated code, which a user may not have.
CONFIG = "post_hooks: []\n"


@dataclass
class Generated:
    server: RunningServer
    package: str
    output: str

    def module(self, name: str) -> ModuleType:
        return importlib.import_module(f"{self.package}.{name}")

    def call(self, operation: str, **kwargs: Any) -> Any:
        """The operation's `sync_detailed` with an authenticated client."""
        client = self.module("client").AuthenticatedClient(base_url=self.server.url, token=self.server.key,
                                                           raise_on_unexpected_status=True)
        return self.module(f"api.default.{operation}").sync_detailed(client=client, **kwargs)


@pytest.fixture(scope="module", params=sorted(PROFILES))
def generated(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Generated]:
    version = request.param
    work = tmp_path_factory.mktemp(f"client-{version}")
    srv = start_server(work / "hermes", "--hermes-version", version, in_process=False)
    package = f"hermes_client_{version.replace('.', '_')}_{uuid.uuid4().hex[:6]}"
    try:
        document = work / "openapi.json"
        document.write_bytes(httpx.get(srv.url + "/openapi.json", timeout=10).content)
        (work / "config.yaml").write_text(CONFIG, encoding="utf-8")
        run = subprocess.run([str(GENERATOR), "generate", "--path", str(document), "--output-path",
                              str(work / package), "--meta", "none", "--config", str(work / "config.yaml")],
                             capture_output=True, text=True, timeout=120, cwd=work)
        output = run.stdout + run.stderr
        assert run.returncode == 0, output
        sys.path.insert(0, str(work))
        yield Generated(srv, package, output)
    finally:
        if str(work) in sys.path:
            sys.path.remove(str(work))
        for name in [name for name in sys.modules if name == package or name.startswith(package + ".")]:
            del sys.modules[name]
        srv.stop()


def test_the_generator_warns_of_nothing(generated: Generated) -> None:
    assert "warning" not in generated.output.lower(), generated.output
    assert "error" not in generated.output.lower(), generated.output


def test_the_request_models_are_typed(generated: Generated) -> None:
    """What issue-free generation means to a user: the fields take their types, not `Any`."""
    models = generated.module("models")
    hints = {name: " ".join(str(models.PatchSession.__annotations__[name]).split())
             for name in ("title", "end_reason")}
    assert hints == {"title": "None | str | Unset", "end_reason": "str | Unset"}
    assert "Any" not in str(models.ChatRequest.__annotations__["message"])


def test_the_session_routes_through_the_generated_client(generated: Generated) -> None:
    models = generated.module("models")
    call = generated.call
    sid, fork_id = f"gen-{uuid.uuid4().hex[:8]}", f"gen-fork-{uuid.uuid4().hex[:8]}"

    created = call("session_create", body=models.CreateSession(id=sid, title=f"Generated {sid}"))
    assert created.status_code == 201
    assert (created.parsed.session.id, created.parsed.session.title) == (sid, f"Generated {sid}")

    listed = call("sessions", limit="50").parsed
    assert sid in [row.id for row in listed.data]
    assert call("session", session_id=sid).parsed.session.title == f"Generated {sid}"

    renamed = call("session_update", session_id=sid, body=models.PatchSession(title=f"Renamed {sid}")).parsed
    assert renamed.session.title == f"Renamed {sid}" and renamed.session.ended_at is None

    reply = call("session_chat", session_id=sid, body=models.ChatRequest(message="Hello")).parsed
    assert reply.session_id == sid and reply.message.content and reply.usage.total_tokens > 0
    parts = [models.TextPart(type_=models.TextPartType.TEXT, text="parts"),
             models.TextPart(type_=models.TextPartType.INPUT_TEXT, text="too")]
    assert call("session_chat", session_id=sid, body=models.ChatRequest(message=parts)).status_code == 200

    transcript = call("session_messages", session_id=sid).parsed
    assert transcript.session_id == sid
    assert [(m.role, m.content) for m in transcript.data if m.role == "user"] == [("user", "Hello"),
                                                                                 ("user", "parts\ntoo")]
    assert [m.role for m in transcript.data] == ["user", "assistant", "user", "assistant"]

    fork = call("session_fork", session_id=sid, body=models.ForkSession(id=fork_id))
    assert fork.status_code == 201 and fork.parsed.session.parent_session_id == sid
    assert len(call("session_messages", session_id=fork_id).parsed.data) == 4
    closed = call("session_update", session_id=sid, body=models.PatchSession(end_reason="client_closed")).parsed
    assert closed.session.end_reason == "branched"  # the fork closed it first: first close wins

    for session_id in (fork_id, sid):
        deleted = call("session_delete", session_id=session_id).parsed
        assert (deleted.id, deleted.deleted) == (session_id, True)
    gone = call("session", session_id=sid)
    assert gone.status_code == 404 and gone.parsed.error.code == "session_not_found"
