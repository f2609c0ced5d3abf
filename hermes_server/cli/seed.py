"""`hermes-server seed FILE`: load a fixture into a Hermes home from outside any server."""

from __future__ import annotations

import argparse
import sys
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hermes_server.cli.options import HOME
from hermes_server.config import Settings
from hermes_server.dialects import KNOWN
from hermes_server.domain.wording import counted
from hermes_server.families import Family, FixtureParts, with_defaults

if TYPE_CHECKING:
    from hermes_server.testing.load import LoadResult


async def _seed(home: Path, document: Any, now: float, replace: bool) -> tuple[LoadResult, FixtureParts]:
    """Load `document`, each known dialect whose key it uses opened on its own file for the load."""
    from hermes_server.store.db import Database
    from hermes_server.testing.load import seed_home

    settings = with_defaults(Settings(home=home), KNOWN)
    used = [d for d in KNOWN if d.fixture_key is not None and isinstance(document, dict)
            and document.get(d.fixture_key) is not None]
    families: tuple[Family, ...] = tuple(d.build(settings, partial(Database, reader_threads=1)) for d in used)
    parts = FixtureParts.of(KNOWN, None, families)
    try:
        return await seed_home(home, document, now, replace=replace, parts=parts), parts
    finally:
        for family in families:
            await family.close()


def _created_since(home: Path, before: set[str] | None) -> None:
    """Remove what a rejected seed created in a home that had no state.db (the files the load
    opened: state.db, its -wal/-shm, a dialect's store; the home itself when it was made for
    it): "nothing written" leaves nothing behind."""
    if not home.is_dir():
        return
    for entry in home.iterdir():
        if (before is None or entry.name not in before) and not entry.is_dir():
            entry.unlink(missing_ok=True)
    if before is None:
        try:
            home.rmdir()
        except OSError:
            pass  # something else is in it now: leave it


def seed(args: argparse.Namespace) -> int:
    """`hermes-server seed FILE`: exit 0 loaded, 1 rejected (problems on stderr), 2 unusable state.db."""
    import asyncio
    import time

    from hermes_server.domain.errors import (
        DatabaseUnavailable,
        DocumentError,
        SchemaMismatch,
    )
    from hermes_server.store.migrate import check_existing
    from hermes_server.testing.load import read_document, replace_refusal
    from hermes_server.testing.model import parse_fixture

    home = HOME.resolve(args.home)
    db_path = Settings(home=home).db_path
    path = Path(args.file).expanduser()
    fresh = not db_path.exists()
    before = {entry.name for entry in home.iterdir()} if fresh and home.is_dir() else None
    try:
        check_existing(db_path)
        document = read_document(path)
        fixture = parse_fixture(document, time.time(), defer=True, owned=FixtureParts.of(KNOWN, None).keys)
        refusal = replace_refusal(db_path, fixture) if args.replace and not args.force and not fixture.problems else None
        if refusal:
            print(f"hermes-server: {refusal}", file=sys.stderr)
            return 2
        result, parts = asyncio.run(_seed(home, document, time.time(), args.replace))
    except DocumentError as exc:
        if fresh:
            _created_since(home, before)
        print(f"hermes-server: {exc.report(f'fixture {path}')}", file=sys.stderr)
        return 1
    except (SchemaMismatch, DatabaseUnavailable) as exc:
        print(f"hermes-server: {exc}", file=sys.stderr)
        return 2
    print(f"hermes-server: loaded {path} into {db_path}: {counted(result.sessions_written, 'session')}, "
          f"{counted(result.messages_written, 'message')} "
          f"(state.db now holds {counted(result.sessions_total, 'session')})")
    for key, counts in result.parts.items():
        print(f"hermes-server: {parts.loaders[key].summary(counts)}")
    return 0
