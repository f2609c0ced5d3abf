"""Let an option of the plugin take a value that starts with a dash: `--hermes-serve-args "--upstream-quirks"`.

argparse, which pytest parses its command line with, reads a lone word that starts with `-`
(and has no space) as the next option, so the option before it ends "expected one argument";
only `--hermes-serve-args=--upstream-quirks` got through. The options that take `serve` flags
as their value are declared here, and before pytest's parser reads the command line (each of
its passes: PYTEST_ADDOPTS and the ini's `addopts` included) the word after such an option is
joined to it with `=`, the form argparse reads as the option's value.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import pytest


def joined(args: Sequence[str], options: Sequence[str]) -> list[str]:
    """`args` with each of `options` followed by a separate word turned into `option=word`."""
    out: list[str] = []
    words = iter(args)
    for word in words:
        if word == "--":
            out += [word, *words]
            break
        if word in options:
            value = next(words, None)
            out.append(word if value is None else f"{word}={value}")
        else:
            out.append(word)
    return out


def _joining(parse: Callable[..., Any], options: Sequence[str]) -> Callable[..., Any]:
    def parse_joined(args: Sequence[Any], *rest: Any, **kwargs: Any) -> Any:
        return parse([str(word) for word in joined([str(a) for a in args], options)], *rest, **kwargs)

    return parse_joined


def accept_dash_values(parser: pytest.Parser, options: Sequence[str]) -> None:
    """Make `parser` (pytest's, as `pytest_addoption` receives it) join each of `options` to its value.

    Both of the parser's entry points are wrapped on this parser object only: `parse_known_and_unknown_args`
    (which `parse_known_args` calls, for the early passes) and `parse` (the last one)."""
    for name in ("parse_known_and_unknown_args", "parse"):
        method = getattr(parser, name, None)
        if method is not None:  # a pytest without it parses as before: the `=` form still works
            setattr(parser, name, _joining(method, options))
