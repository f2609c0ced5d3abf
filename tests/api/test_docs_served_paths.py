"""What the docs say is not served is really not served, and nothing served is said not to be.

A newcomer reads "answers like any unknown path" and stops looking; if the path is served,
the docs hid a feature, and if a path said to be served is not, the docs sent them to a 404.
Every sentence of README.md and docs/*.md that says paths answer like an unknown path (or
the framework's `404: Not Found`) names them before that phrase, or says "those paths" of
the paths an earlier sentence of its paragraph names. Each one is checked against the
served route table and then against a real server started with default options.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from hermes_server.app import build_routes
from hermes_server.http.routing import Router
from tests.support.server import RunningServer, start_server

ROOT = Path(__file__).resolve().parents[2]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
UNKNOWN = re.compile(r"any unknown path|`404: Not Found`")
METHODS = "GET|POST|PUT|PATCH|DELETE"
# `/v1/skills`, `/api/jobs…`, `PUT /v1/toolsets`, `POST/GET /v1/sessions`
PATH = re.compile(rf"`((?:(?:{METHODS})(?:/(?:{METHODS}))* )?)(/[^`\s]*)`")


def _sentences(paragraph: str) -> list[str]:
    return re.split(r"(?<=[.;])\s+(?=[A-Z`(])", " ".join(paragraph.split()))


def _paths(text: str) -> list[tuple[str, str]]:
    """(method, concrete path) for every path named in `text`; GET when no method is named."""
    found = []
    for methods, template in PATH.findall(text):
        path = re.sub(r"\{[^}]*\}", "x", template.rstrip("…").rstrip("."))
        for method in (methods.strip().split("/") if methods.strip() else ["GET"]):
            found.append((method, path))
    return found


def claims() -> list[tuple[str, str, str, str]]:
    """(page, sentence, method, path) for each path a page says answers like an unknown path."""
    found = []
    for page in PAGES:
        text = re.sub(r"```.*?```", "", page.read_text(encoding="utf-8"), flags=re.S)
        for paragraph in re.split(r"\n\s*\n|\n(?=\s*- )", text):
            sentences = _sentences(paragraph)
            for index, sentence in enumerate(sentences):
                match = UNKNOWN.search(sentence)
                if not match:
                    continue
                named = _paths(sentence[:match.start()])
                if not named and "those paths" in sentence[:match.start()]:
                    earlier = (_paths(s) for s in reversed(sentences[:index]))
                    named = next((p for p in earlier if p), [])
                found += [(page.name, sentence, method, path) for method, path in named]
    return found


CLAIMS = claims()


def test_the_docs_make_such_claims() -> None:
    # The fixture API, herm.run's paths and 0.19.0's unregistered features are all described so.
    named = {path for _, _, _, path in CLAIMS}
    assert {"/_fixture/", "/v1/sandboxes/warm", "/v1/audio/speech"} <= named


@pytest.mark.parametrize(("page", "sentence", "method", "path"), CLAIMS,
                         ids=[f"{page}:{method} {path}" for page, _, method, path in CLAIMS])
def test_no_path_said_unknown_is_in_the_route_table(page: str, sentence: str, method: str, path: str) -> None:
    match = Router(build_routes()).resolve(method, path)
    assert match.route is None, f"{page} says {method} {path} answers like an unknown path, but it is served: {sentence}"


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningServer]:
    srv = start_server(tmp_path_factory.mktemp("docs-paths") / "hermes")
    yield srv
    srv.stop()


def test_paths_said_unknown_answer_the_unknown_path_404(server: RunningServer) -> None:
    reference = server.client.get(f"/no-such-path-{uuid.uuid4().hex}")
    assert reference.status_code == 404
    wrong = []
    for page, _sentence, method, path in CLAIMS:
        answer = server.client.request(method, path)
        same = (answer.status_code, answer.headers.get("content-type"), answer.content) == (
            reference.status_code, reference.headers.get("content-type"), reference.content)
        if not same:
            wrong.append(f"{page}: {method} {path} -> {answer.status_code} {answer.text[:60]!r}")
    assert not wrong, "\n".join(wrong)
