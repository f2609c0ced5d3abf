"""docs/api.md is the reference users read: current, complete, the session routes first.

It is generated (`python -m tools.api_reference`) from the documents the server serves, so this
holds the file to what the command writes now, and the output to what a reader needs: every
operation of every profile (with `--fixture-api`), the nine session routes first with a curl
example each and their hazards, and a short, distinct name per operation (`Operation.summary`,
which `hermes-server verify` reports behaviours by). README links it in its first screen.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from hermes_server.domain.profiles import PROFILES
from tests.support.openapi import profile_document
from tools import api_reference

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "docs" / "api.md"
# What a connector must handle on the session routes, each named where it happens.
HAZARDS = {
    ("PATCH", "/api/sessions/{session_id}"): "**First close wins.**",
    ("POST", "/api/sessions/{session_id}/fork"): "**Not atomic.**",
    ("GET", "/api/sessions"): "**Compression tips.**",
    ("POST", "/api/sessions/{session_id}/chat"): "**The id may rotate.**",
    ("POST", "/api/sessions/{session_id}/chat/stream"): "**The id may rotate.**",
}


@pytest.fixture(scope="module")
def page() -> str:
    return PAGE.read_text(encoding="utf-8")


def _sections(page: str) -> dict[tuple[str, str], str]:
    """Each operation's section, by (method, path), from its "`METHOD /path`" line to the next heading."""
    found = {}
    for match in re.finditer(r"^### [^\n]*\n\n`([A-Z]+) (\S+)`\n(.*?)(?=^##)", page + "\n## end", re.M | re.S):
        found[match.group(1), match.group(2)] = match.group(3)
    return found


def test_the_page_is_what_the_command_writes(page: str) -> None:
    assert page == api_reference.render(), "docs/api.md is out of date: run python -m tools.api_reference"


@pytest.mark.parametrize("version", sorted(PROFILES))
def test_every_operation_of_every_profile_has_its_section(page: str, version: str) -> None:
    sections = _sections(page)
    document = profile_document(version, fixture_api=True)
    served = [(method.upper(), path) for path, item in document["paths"].items() for method in item]
    assert [key for key in served if key not in sections] == []
    for method, path in served:
        assert "Answers:" in sections[method, path], (method, path)


def test_the_session_routes_come_first_each_with_a_curl_example_and_its_hazards(page: str) -> None:
    order = re.findall(r"^`([A-Z]+) (\S+)`$", page, re.M)
    assert order[:9] == api_reference.SESSION_ROUTES
    sections = _sections(page)
    for method, path in api_reference.SESSION_ROUTES:
        example = re.search(r"```bash\ncurl .*\n```", sections[method, path])
        assert example and path.split("{")[0] in example.group(0), (method, path)
    for key, hazard in HAZARDS.items():
        assert hazard in sections[key], key


def test_the_check_mode_fails_on_a_stale_page(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    stale = tmp_path / "api.md"
    stale.write_text("# API reference\n", encoding="utf-8")
    monkeypatch.setattr(api_reference, "TARGET", stale)
    assert api_reference.main(["--check"]) == 1
    assert api_reference.main([]) == 0
    assert api_reference.main(["--check"]) == 0


@pytest.mark.parametrize("version", sorted(PROFILES))
def test_each_operation_has_a_short_distinct_name(version: str) -> None:
    document = profile_document(version, fixture_api=True)
    names = [(op["summary"], path) for path, item in document["paths"].items() for op in item.values()]
    assert len({name for name, _ in names}) == len(names), sorted(name for name, _ in names)
    long = [name for name, path in names if not path.startswith("/_") and len(name) > 50]
    assert long == []


def test_readme_links_the_reference_in_its_first_screen() -> None:
    first_screen = "\n".join((ROOT / "README.md").read_text(encoding="utf-8").splitlines()[:25])
    assert "(docs/api.md)" in first_screen
