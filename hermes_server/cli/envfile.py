"""`$HERMES_HOME/.env`: the settings file upstream reads at start, read here the same way.

hermes-agent 0.19.0 loads the home's `.env` with python-dotenv before anything reads a
setting, and lets it override the process environment ("user-managed env files should
override stale shell exports", `hermes_cli/env_loader.py` of the installed package). So a
home that keeps `API_SERVER_KEY` only there serves with that key. This module reads the
dotenv forms upstream's loader accepts (`KEY=VALUE`, `export KEY=VALUE`, single and double
quotes with their escapes, values over several lines inside quotes, `#` comments, `${NAME}`
and `${NAME:-default}` expanded from the environment and earlier lines) without a
dependency, and puts the values in `os.environ` for the option table to read. A flag given
on the command line still wins over both.

Where python-dotenv warns about a line it cannot parse and skips it, this refuses it: one
line naming the file and the line number, never the line's text (it may hold a key).
`HERMES_HOME` is never taken from the file: the file is found through it.
"""

from __future__ import annotations

import argparse
import codecs
import errno
import os
import re
from collections.abc import Collection, MutableMapping
from dataclasses import dataclass
from pathlib import Path

from hermes_server.cli.options import ENV_ORIGINS, HOME, OptionError

ENV_FILE = ".env"
# Read from the environment only: the home (and so this file) is found through it.
NOT_FROM_FILE = frozenset({"HERMES_HOME"})

_SPACE = r"[^\S\r\n]"
_LEADING = re.compile(r"\s*")
_EXPORT = re.compile(rf"(?:export{_SPACE}+)?")
_QUOTED_KEY = re.compile(r"'([^']+)'")
_KEY = re.compile(r"([^=#\s]+)")
_EQUALS = re.compile(rf"={_SPACE}*")
_SINGLE = re.compile(r"'((?:\\'|[^'])*)'")
_DOUBLE = re.compile(r'"((?:\\"|[^"])*)"')
_UNQUOTED = re.compile(r"([^\r\n]*)")
_COMMENT = re.compile(rf"(?:{_SPACE}*#[^\r\n]*)?")
_END = re.compile(rf"{_SPACE}*(?:\r\n|\n|\r|$)")
_BLANKS = re.compile(f"{_SPACE}*")
_SINGLE_ESCAPES = re.compile(r"\\[\\']")
_DOUBLE_ESCAPES = re.compile(r"\\[\\'\"abfnrtv]")
_VARIABLE = re.compile(r"\$\{(?P<name>[^}:]*)(?::-(?P<default>[^}]*))?\}")
_NEWLINES = re.compile(r"\r\n|\n|\r")


class EnvFileError(ValueError):
    """A `.env` that cannot be used; the message names the file (and line), never its content."""


@dataclass(frozen=True)
class Loaded:
    """What one `.env` gave: the variables it set, and those it holds but may not set."""

    path: Path
    names: tuple[str, ...]
    ignored: tuple[str, ...]


def _unescape(pattern: re.Pattern[str], text: str) -> str:
    return pattern.sub(lambda found: codecs.decode(found.group(0), "unicode-escape"), text)


class _Reader:
    """A cursor over the text: `take` consumes what a pattern matches at the cursor, or nothing."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.at = 0

    def take(self, pattern: re.Pattern[str]) -> re.Match[str] | None:
        found = pattern.match(self.text, self.at)
        if found is not None:
            self.at = found.end()
        return found

    def next_char(self) -> str:
        return self.text[self.at:self.at + 1]


_NOT_SHOWN = "(the line is not shown: it may hold a secret)"


def parse(text: str, where: str) -> list[tuple[str, str | None]]:
    """The (key, raw value) pairs of a dotenv text, in order; a key without `=` has the value None
    (declared, not set). Raises EnvFileError naming `where` and the line of a statement it cannot read."""
    pairs: list[tuple[str, str | None]] = []
    reader = _Reader(text)
    while True:
        reader.take(_LEADING)
        if not reader.next_char():
            return pairs
        line = len(_NEWLINES.findall(text, 0, reader.at)) + 1
        reader.take(_EXPORT)
        key: str | None = None
        if reader.next_char() != "#":
            found = reader.take(_QUOTED_KEY if reader.next_char() == "'" else _KEY)
            if found is None:
                raise EnvFileError(f"{where}, line {line}: not a KEY=VALUE setting {_NOT_SHOWN}")
            key = found.group(1)
        reader.take(_BLANKS)
        value: str | None = None
        if key is not None and reader.take(_EQUALS) is not None:
            value = _value(reader, where, line)
        reader.take(_COMMENT)
        if reader.take(_END) is None:
            raise EnvFileError(f"{where}, line {line}: not a KEY=VALUE setting: text after its value {_NOT_SHOWN}")
        if key is not None:
            pairs.append((key, value))


def _value(reader: _Reader, where: str, line: int) -> str:
    """The value at the cursor (just after `=`): quoted, with its escapes, or up to a ` #` comment."""
    quote = reader.next_char()
    if quote in ("'", '"'):
        found = reader.take(_SINGLE if quote == "'" else _DOUBLE)
        if found is None:
            raise EnvFileError(f"{where}, line {line}: a quoted value is not closed {_NOT_SHOWN}")
        return _unescape(_SINGLE_ESCAPES if quote == "'" else _DOUBLE_ESCAPES, found.group(1))
    if quote in ("", "\n", "\r"):
        return ""
    raw = reader.take(_UNQUOTED)
    return re.sub(r"\s+#.*", "", raw.group(1) if raw else "").rstrip()


def expand(pairs: list[tuple[str, str | None]], environ: MutableMapping[str, str]) -> dict[str, str | None]:
    """Each value with `${NAME}` and `${NAME:-default}` replaced, from the environment and the lines
    before it (the file's own values win, as with python-dotenv's override)."""
    values: dict[str, str | None] = {}
    for key, raw in pairs:
        if raw is None:
            values[key] = None
            continue
        seen = {**environ, **values}

        def lookup(found: re.Match[str], seen: dict[str, str | None] = seen) -> str:
            value = seen.get(found["name"], found["default"] or "")
            return value if value is not None else ""
        values[key] = _VARIABLE.sub(lookup, raw)
    return values


def read(path: Path, environ: MutableMapping[str, str]) -> dict[str, str | None]:
    """The settings of the dotenv file at `path`, expanded against `environ`."""
    data = path.read_bytes().removeprefix(codecs.BOM_UTF8)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        text = data.decode("latin-1")  # as upstream's loader falls back
    if "\x00" in text:
        raise EnvFileError(f"{path}: not a text file (it holds NUL bytes)")
    return expand(parse(text, str(path)), environ)


def load(home: Path, environ: MutableMapping[str, str] | None = None) -> Loaded | None:
    """Read `home`/.env into `environ` (os.environ), its values over the environment's; None when
    there is no such file. Raises EnvFileError for a file that is there but cannot be used; a home
    that cannot even be looked into is not this module's to report (the server says it once,
    and reports itself not ready)."""
    target = os.environ if environ is None else environ
    path = home / ENV_FILE
    try:
        values = read(path, target)
    except (FileNotFoundError, NotADirectoryError):
        return None
    except IsADirectoryError:
        raise EnvFileError(f"{path} is a directory, not a settings file") from None
    except PermissionError as exc:
        if not os.access(home, os.X_OK):
            return None
        raise EnvFileError(f"cannot read {path}: {exc.strerror}") from None
    except OSError as exc:
        if exc.errno in (errno.ENAMETOOLONG, errno.ELOOP):
            return None
        raise EnvFileError(f"cannot read {path}: {exc.strerror or exc}") from None
    taken, ignored = [], []
    for name, value in values.items():
        if name in NOT_FROM_FILE:
            ignored.append(name)
        elif value is not None:
            target[name] = value
            ENV_ORIGINS[name] = path
            taken.append(name)
    return Loaded(path, tuple(taken), tuple(ignored))


def load_for(args: argparse.Namespace) -> Loaded | None:
    """Read the `.env` of the home a command was given (--home, else HERMES_HOME, else ~/.hermes) into
    the environment; OptionError (one line, exit status 2) when it cannot be used."""
    try:
        return load(HOME.resolve(args.home))
    except EnvFileError as exc:
        raise OptionError(str(exc)) from None


def summary(loaded: Loaded, used: Collection[str]) -> str:
    """The log line saying what a `.env` set: the names of the settings hermes-server reads (never a
    value), how many others it holds, and what it may not set."""
    ours = [name for name in loaded.names if name in used]
    others = len(loaded.names) - len(ours)
    line = f"settings read from {loaded.path}, over the environment's: {', '.join(ours) or 'none hermes-server uses'}"
    if others:
        line += f" (and {others} other{'s' if others != 1 else ''} hermes-server does not use)"
    if loaded.ignored:
        line += f"; {', '.join(loaded.ignored)} there is ignored: the home is found through it"
    return line
