"""README.md and docs/*.md cite only what a reader can open.

A user has the repository, the installed packages and github.com; they do not have the
research notes the profiles were built from. So the docs cite upstream by a release, a PR
or issue URL on github.com/NousResearch/hermes-agent, or a file of the installed package,
and never by a source-index id, an evidence grade, a section mark or file name of those
notes, this project's own issue numbers, a path outside the repository, or a package name
no registry serves (hermes-server installs from the repository). This test
holds every line of those pages to that; the patterns are tried on samples first, so a
pattern that stops matching fails too.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
# `[#85226]: https://github.com/NousResearch/hermes-agent/pull/85226`, the target of `[#85226]` in the text.
REFERENCE = re.compile(r"^\[#(\d+)\]: https://github\.com/NousResearch/hermes-agent/(?:pull|issues)/(\d+)$", re.MULTILINE)
UPSTREAM = "https://github.com/NousResearch/hermes-agent"
UPSTREAM_LINK = re.compile(r"https://github\.com/NousResearch/hermes-agent/(?:pull|issues)/\d+")

# What a reader cannot follow, each with a sample it must catch.
INTERNAL = {
    "a source-index id": re.compile(r"\bread_file\b|\bids? \d{6,}|\b\d{11}\b"),
    "an evidence grade": re.compile(r"\[(?:R|M|B|D|inference)(?:\]|[ ,;])|\b[RMB] V\d\b|\bV\d\b"),
    "a section mark": re.compile(r"§"),
    "an internal file": re.compile(
        r"hermes-after-0\.\d+|sessions-api\.md|DECISIONS\.md|\.\./shared/|/work/|\bQ\d+ of the spec\b"),
    "this project's issue number": re.compile(r"\b[Ii]ssues? #?\d+\b|\(#\d{1,3}\)"),
    "an upstream number without its link": re.compile(r"(?<![\w/\[])#\d{4,}\b"),
    "a package name no registry serves": re.compile(r"pip install ['\"]?hermes-server(?![\w/.-])"),
}
CAUGHT = {
    "a source-index id": ["(read_file id 66604027870)", "ids 66455427443 and 5761", "id 71450118297"],
    "an evidence grade": ["[R V2 live probe]", "[M #70169; R V2, V4]", "[B]", "[inference]", "V3 `_handle_stop_run`"],
    "a section mark": ["§1.3 \"Auth 401 envelope\""],
    "an internal file": ["`hermes-after-0.19.md`", "(`../shared/oracle/setup.sh`)", "open question Q5 of the spec"],
    "this project's issue number": ["(before issue 14)", "issue 20; tested in", "served (issues 1–10)", "fixed (#20)"],
    "an upstream number without its link": ["Session-stream runs (0.20+, #85226)", "open PR #96507"],
    "a package name no registry serves": ["(`pip install hermes-server`, or", "pip install 'hermes-server[yaml]'"],
}
ALLOWED = [
    "[#85226](https://github.com/NousResearch/hermes-agent/pull/85226)",
    "https://github.com/NousResearch/hermes-agent/issues/88231",
    "lineage numbering (`X`, `X #2`, `X #3`)",
    "`#1, #2` are journal seqs",
    "the deviations D1–D10",
    "\"started_at\": 1767225600.0, \"clock\": 1893456000",
    "Compose v1, schema v22 to v30",
    "the release tag v2026.8.18",
    "`pip install path/to/hermes-server`, `pip install hermes-server-main/`",
]


def findings(line: str) -> list[str]:
    """The kinds of internal reference in one line (upstream links blanked first)."""
    text = UPSTREAM_LINK.sub("", line)
    return [kind for kind, pattern in INTERNAL.items() if pattern.search(text)]


@pytest.mark.parametrize("kind", sorted(INTERNAL))
def test_each_pattern_catches_its_samples(kind: str) -> None:
    for sample in CAUGHT[kind]:
        assert kind in findings(sample), sample


@pytest.mark.parametrize("line", ALLOWED)
def test_what_a_reader_can_open_is_allowed(line: str) -> None:
    assert findings(line) == []


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.relative_to(ROOT).as_posix())
def test_the_page_cites_only_what_a_reader_can_open(page: Path) -> None:
    bad = [
        f"{page.relative_to(ROOT)}:{number}: {', '.join(kinds)}: {line.strip()[:160]}"
        for number, line in enumerate(page.read_text(encoding="utf-8").splitlines(), 1)
        if (kinds := findings(line))
    ]
    assert not bad, "internal references a user cannot open:\n" + "\n".join(bad)


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.relative_to(ROOT).as_posix())
def test_each_upstream_number_used_as_a_reference_link_is_defined(page: Path) -> None:
    text = page.read_text(encoding="utf-8")
    used = set(re.findall(r"\[#(\d+)\](?![(:])", text))
    defined = {number for number, linked in REFERENCE.findall(text) if number == linked}
    assert used <= defined, f"[#N] without its line `[#N]: {UPSTREAM}/pull/N`: {sorted(used - defined)}"
