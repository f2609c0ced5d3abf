"""List query parameters: Python int() semantics, defaults, caps, booleans (spec §4.1.1)."""

from __future__ import annotations

import pytest

from hermes_server.domain.params import DEFAULT_LIMIT, MAX_LIMIT, MAX_OFFSET, ListQuery, nonnegative_int, request_bool


@pytest.mark.parametrize(
    ("raw", "value"),
    [
        (None, 50), ("", 50), ("abc", 50), ("1.5", 50), ("-1", 50), ("-0", 0), ("0", 0), ("7", 7),
        ("1_0", 10), (" 1 ", 1), ("\t3\n", 3), ("+2", 2), ("500", 200), ("200", 200), ("201", 200),
        ("\u0663", 3),  # ARABIC-INDIC DIGIT THREE
        ("\uff12\uff10", 20),  # fullwidth digits
        ("\u2003\u0661\u0662\u2003", 12),  # Unicode spaces around Unicode digits
        ("1__0", 50), ("_1", 50), ("0x10", 50), ("1e2", 50), ("\u2081", 50),  # subscript one is not a decimal
        ("3\x00", 50),
    ],
)
def test_limit(raw: str | None, value: int) -> None:
    assert nonnegative_int(raw, DEFAULT_LIMIT, MAX_LIMIT) == value


def test_offset_cap_and_default() -> None:
    assert nonnegative_int("2000000", 0, MAX_OFFSET) == 1_000_000
    assert nonnegative_int("-5", 0, MAX_OFFSET) == 0
    assert nonnegative_int("x", 0, MAX_OFFSET) == 0


@pytest.mark.parametrize("raw", ["1", "true", "yes", "on", " TRUE ", "On", "\tyes\n", "\u2003yes"])
def test_true(raw: str) -> None:
    assert request_bool(raw) is True


@pytest.mark.parametrize("raw", [None, "", "0", "false", "no", "off", "2", "y", "t", "truee", "1.0"])
def test_false(raw: str | None) -> None:
    assert request_bool(raw) is False


def test_parse_first_values() -> None:
    q = ListQuery.parse({"limit": "500", "offset": "2000000", "source": "", "include_children": "yes"})
    assert q == ListQuery(limit=200, offset=1_000_000, source=None, include_children=True)
    assert ListQuery.parse({}) == ListQuery(limit=50, offset=0, source=None, include_children=False)
    assert ListQuery.parse({"source": "CLI"}).source == "CLI"
