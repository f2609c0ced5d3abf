"""The pytest plugin's markers: what each one says, and reading a test's markers into values.

Kept apart from the hooks and fixtures of `plugin.py` so each stays short. A marker used
wrongly fails the test's setup with one line naming the marker (`pytest.fail`, no traceback
of the plugin's own).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

MARKERS = (
    ("hermes_fixture(document, ...): seed the `hermes` server with fixture documents "
     "(dicts, or JSON/YAML paths relative to the test file) after its reset"),
    ("hermes_faults(faults): install these faults (a list of fault objects, or one) on the `hermes` server "
     "after its reset"),
    ("hermes_audit: after the test, fail it when the server's audit of its traffic (GET /_fixture/audit) "
     "has an error finding; the findings go in a report section"),
    ("hermes_version(version): the test's `hermes` server (and `make_hermes`'s servers) answer as that "
     "Hermes release (`serve --hermes-version`, e.g. \"0.21.2\")"),
)
# The markers that give a test the `hermes` fixture even when it did not name it.
NAMES = ("hermes_fixture", "hermes_faults", "hermes_audit", "hermes_version")


def document_name(document: Any) -> str:
    return str(document) if isinstance(document, Path) else "the fixture object"


def marked_documents(request: pytest.FixtureRequest) -> list[Any]:
    """Fixture documents of every hermes_fixture marker, module's before class's before the test's."""
    out: list[Any] = []
    for mark in reversed(list(request.node.iter_markers("hermes_fixture"))):
        for document in (*mark.args, *mark.kwargs.values()):
            if isinstance(document, (str, Path)):
                path = Path(request.node.path).parent / document
                if not path.is_file():
                    pytest.fail(f"@pytest.mark.hermes_fixture: {path} does not exist", pytrace=False)
                document = path
            elif not isinstance(document, dict):
                pytest.fail(f"@pytest.mark.hermes_fixture takes file names or dicts, not {type(document).__name__}",
                            pytrace=False)
            out.append(document)
    return out


def marked_faults(request: pytest.FixtureRequest) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for mark in reversed(list(request.node.iter_markers("hermes_faults"))):
        for arg in mark.args:
            items = arg if isinstance(arg, (list, tuple)) else [arg]
            if not all(isinstance(item, Mapping) for item in items):
                pytest.fail("@pytest.mark.hermes_faults takes fault objects (dicts or Fault builders) or lists "
                            "of them", pytrace=False)
            out.extend(dict(item) for item in items)
    return out


def marked_version(request: pytest.FixtureRequest) -> str | None:
    """The closest hermes_version marker's release (the test's over its class's over its module's).
    Which releases exist is the server's to say: an unknown one fails with its one-line refusal."""
    mark = request.node.get_closest_marker("hermes_version")
    if mark is None:
        return None
    values = [*mark.args, *mark.kwargs.values()]
    if len(values) != 1 or not isinstance(values[0], str) or not values[0].strip():
        pytest.fail('@pytest.mark.hermes_version takes one release, e.g. @pytest.mark.hermes_version("0.21.2")',
                    pytrace=False)
    return str(values[0]).strip()
