"""A dialect's option values are read through typed keys, never as attributes of Settings.

`Settings` once answered any attribute from its `extras`, so mypy accepted a misspelt
`settings.max_request_byts` anywhere. Now an unknown attribute is an AttributeError (and a
type error), and a dialect reads its values with `settings.extra(KEY)`.
"""

from __future__ import annotations

from pathlib import Path

import pytest

import hermes_server.hermrun as herm_run
from hermes_server.config import Extra, Settings
from hermes_server.dialects import KNOWN
from hermes_server.families import with_defaults


def test_an_unknown_attribute_is_an_error_not_an_extra(tmp_path: Path) -> None:
    settings = Settings(home=tmp_path, extras={"herm_run_allowance": 7})
    with pytest.raises(AttributeError):
        getattr(settings, "herm_run_allowance")  # noqa: B009 - the point is the dynamic lookup
    with pytest.raises(AttributeError):
        getattr(settings, "max_request_byts")  # noqa: B009
    assert settings.extra(herm_run.ALLOWANCE) == 7


def test_a_missing_extra_names_the_option(tmp_path: Path) -> None:
    with pytest.raises(KeyError, match="herm_run_allowance"):
        Settings(home=tmp_path).extra(herm_run.ALLOWANCE)


def test_every_key_of_a_dialect_names_one_of_its_option_rows(tmp_path: Path) -> None:
    (dialect,) = [d for d in KNOWN if d.switch == herm_run.SWITCH.dest]
    keys = [value for value in vars(herm_run).values() if isinstance(value, Extra)]
    assert {key.dest for key in keys} == {option.dest for option in dialect.options}
    filled = with_defaults(Settings(home=tmp_path), KNOWN)
    assert {key.dest: filled.extra(key) for key in keys} == dialect.defaults()
