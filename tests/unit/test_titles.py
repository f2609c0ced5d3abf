"""Title sanitising (spec §4.10) and lineage numbering (§4.11)."""

from __future__ import annotations

import pytest

from hermes_server.domain.titles import (
    TitleTooLong,
    like_escape,
    lineage_base,
    next_lineage_title,
    sanitize_title,
    scrub_surrogates,
)


@pytest.mark.parametrize(
    ("raw", "clean"),
    [
        # The verified examples of §4.10.
        ("  a\x01b\t\tc\u200bd\n e  ", "ab cd e"),
        ("a\u2028b", "ab"),
        ("x\u00a0\u00a0y", "x y"),
        ("a\x85b", "a b"),
        ("\u200b", None),
        ("\t\n", None),
        ("\u00e9" * 100, "\u00e9" * 100),
        ("a" * 99 + "\u200b\u200b", "a" * 99),
        # Every deleted range, at both ends of each range.
        ("a\x00\x08\x0b\x0c\x0e\x1f\x7fb", "ab"),
        ("a\u200b\u200c\u200d\u200e\u200fb", "ab"),
        ("a\u2028\u2029\u202a\u202eb", "ab"),
        ("a\u2060\u2066\u2069b", "ab"),
        ("a\ufeff\ufffc\ufff9\ufffbb", "ab"),
        # Kept: the characters next to the deleted ranges.
        ("a\u200ab", "a b"),  # HAIR SPACE is whitespace: collapsed, not deleted
        ("a\u2027b", "a\u2027b"),
        ("a\u206ab", "a\u206ab"),
        ("a\ufffdb", "a\ufffdb"),
        # Whitespace: Python's \s, collapsed then trimmed.
        ("a\r\n\tb", "a b"),
        ("\u3000x\u2003\u2003y\u3000", "x y"),
        ("a\x1c\x1db", "ab"),  # deleted before the whitespace step, although str.isspace() is true
        ("", None),
        ("   ", None),
        ("\ud800x", "\ufffdx"),  # lone surrogates become U+FFFD
        ("Case", "Case"),
        ("0", "0"),
        ("False", "False"),
    ],
)
def test_sanitize(raw: str, clean: str | None) -> None:
    assert sanitize_title(raw) == clean


def test_too_long_counts_code_points_after_cleaning() -> None:
    with pytest.raises(TitleTooLong) as info:
        sanitize_title("t" * 101)
    assert str(info.value) == "Title too long (101 chars, max 100)"
    assert isinstance(info.value, ValueError)
    with pytest.raises(TitleTooLong, match=r"^Title too long \(103 chars, max 100\)$"):
        sanitize_title("x" * 100 + " #2")
    assert sanitize_title("v" * 50 + " \t\n " + "v" * 49) == "v" * 50 + " " + "v" * 49
    assert sanitize_title("  " + "w" * 100 + "\u200b  ") == "w" * 100
    assert sanitize_title("\U0001f600" * 100) == "\U0001f600" * 100


def test_scrub_surrogates() -> None:
    assert scrub_surrogates("a\udc80b\ud83d") == "a\ufffdb\ufffd"
    assert scrub_surrogates("\U0001f600") == "\U0001f600"


@pytest.mark.parametrize(
    ("title", "base"),
    [("Case", "Case"), ("Deal #5", "Deal"), ("a #1 #2", "a #1"), ("x #", "x #"), ("x#2", "x#2"),
     (" #3", ""), ("fork #2", "fork"), ("a #b", "a #b"), ("a  #2", "a "), ("n #\u0663", "n")],
)
def test_lineage_base(title: str, base: str) -> None:
    assert lineage_base(title) == base


def test_next_lineage_title() -> None:
    assert next_lineage_title("Case", []) == "Case"
    assert next_lineage_title("Case", ["Case"]) == "Case #2"
    assert next_lineage_title("Deal", ["Deal #5"]) == "Deal #6"
    assert next_lineage_title("Case", ["Case", "case #7"]) == "Case #8"  # LIKE matched it case-insensitively
    assert next_lineage_title("fork", ["fork", "fork #2"]) == "fork #3"
    assert next_lineage_title("x", ["x #2", "x #10", "x #9"]) == "x #11"
    assert next_lineage_title("x", ["x #abc"]) == "x #2"  # unnumbered matches count as 1


def test_like_escape() -> None:
    assert like_escape("50%_off\\x") == "50\\%\\_off\\\\x"
