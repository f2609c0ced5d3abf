"""`HERMES_HOME/cron/jobs.json`: the cron jobs file, read and written the way Hermes does.

Hermes keeps its cron jobs in one JSON file (`{"jobs": [...], "updated_at": <iso>}`,
two-space indent, ASCII-escaped), replaced atomically under an advisory lock on
`cron/.jobs.lock` that its CLI and gateway also take; `cron/` and `cron/output/` are
owner-only. Using the same file, format and lock lets a real Hermes read and run the
jobs created here, and lets both edit the file without losing each other's writes.
Every change is one locked read-modify-write, run off the event loop.

One `JobsFile` per server (the context's `jobs`), and a registered part of its state:
a fixture reset removes the file and the jobs' output, as a fresh home has neither.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import json
import os
import shutil
import sqlite3
import tempfile
import threading
from collections.abc import Callable, Iterator
from datetime import datetime, tzinfo
from functools import lru_cache
from pathlib import Path
from typing import Any, TypeVar
from zoneinfo import ZoneInfo

from hermes_server.domain.jobs import JobsFileError

T = TypeVar("T")


@lru_cache(maxsize=1)
def _zone() -> tzinfo | None:
    """Hermes's configured zone: HERMES_TIMEZONE when it names a zone, else this machine's."""
    name = os.environ.get("HERMES_TIMEZONE", "").strip()
    try:
        return ZoneInfo(name) if name else None
    except (ValueError, KeyError, OSError):
        return None


def local_time(now: float) -> datetime:
    """Unix time `now` in Hermes's configured zone (the jobs' timestamps and the file's `updated_at`)."""
    moment = datetime.fromtimestamp(now, _zone())
    return moment if _zone() else moment.astimezone()


class JobsFile:
    """The cron directory of one HERMES_HOME."""

    def __init__(self, home: Path, now: Callable[[], float]) -> None:
        # The server's clock: the `updated_at` of each save is its reading in the configured zone.
        self.now = now
        self.cron_dir = home / "cron"
        self.path = self.cron_dir / "jobs.json"
        self.output_dir = self.cron_dir / "output"
        # Where Hermes's configuration names the model a new job snapshots (domain/job_snapshots.py).
        self.config_path = home / "config.yaml"
        self._lock = threading.Lock()

    def _ensure_dirs(self) -> None:
        for directory in (self.cron_dir, self.output_dir):
            try:
                directory.mkdir(parents=True, exist_ok=True)
            except OSError as exc:  # a home this process may not enter or write: the 500 says so
                raise JobsFileError(f"Failed to open cron database: {exc}") from None
            with contextlib.suppress(OSError):
                os.chmod(directory, 0o700)

    @contextlib.contextmanager
    def _locked(self) -> Iterator[None]:
        with self._lock:
            self._ensure_dirs()
            try:
                lock = open(self.cron_dir / ".jobs.lock", "a+", encoding="utf-8")
            except OSError as exc:
                raise JobsFileError(f"Failed to open cron database: {exc}") from None
            with lock as handle:
                fcntl.flock(handle.fileno(), fcntl.LOCK_EX)
                try:
                    yield
                finally:
                    fcntl.flock(handle.fileno(), fcntl.LOCK_UN)

    def _load(self) -> list[dict[str, Any]]:
        return self._load_marked()[0]

    def _load_marked(self) -> tuple[list[dict[str, Any]], bool]:
        """The stored jobs, and whether the file held a bare list rather than `{"jobs": …}`."""
        self._ensure_dirs()
        if not self.path.exists():
            return [], False
        try:
            text = self.path.read_text(encoding="utf-8-sig")
        except OSError as exc:
            raise JobsFileError(f"Failed to read cron database: {exc}") from None
        try:
            data = json.loads(text)
        except ValueError:
            try:  # Hermes repairs a file holding raw control characters in its strings
                data = json.loads(text, strict=False)
            except ValueError as exc:
                raise JobsFileError(f"Cron database corrupted and unrepairable: {exc}") from None
        if isinstance(data, dict):
            return list(data.get("jobs", [])), False
        if isinstance(data, list):
            return data, True
        raise JobsFileError(f"Cron database corrupted: expected {{'jobs': [...]}}, got {type(data).__name__}")

    def _save(self, jobs: list[dict[str, Any]]) -> None:
        self._ensure_dirs()
        fd, tmp = tempfile.mkstemp(dir=str(self.cron_dir), suffix=".tmp", prefix=".jobs_")
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as handle:
                json.dump({"jobs": jobs, "updated_at": local_time(self.now()).isoformat()}, handle, indent=2)
                handle.flush()
                os.fsync(handle.fileno())
            os.replace(tmp, self.path)
            os.chmod(self.path, 0o600)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            raise

    async def model_section(self) -> Any:
        """The `model` section of the home's `config.yaml`, read now as 0.19.0 reads it for each new
        job; None when the file is missing or unreadable, or PyYAML is not installed."""
        return await asyncio.to_thread(self._model_section)

    def _model_section(self) -> Any:
        try:
            import yaml

            with self.config_path.open(encoding="utf-8") as handle:
                config = yaml.safe_load(handle) or {}
            return config.get("model")
        except Exception:  # noqa: BLE001 - as 0.19.0: any failure (no file, bad YAML, no PyYAML) means no snapshot
            return None

    def remove_output(self, job_id: str) -> None:
        """A deleted job's output directory goes with it."""
        target = self.output_dir / job_id
        if target.exists():
            shutil.rmtree(target)

    def latest_executions(self, job_ids: list[str]) -> dict[str, dict[str, Any]]:
        """The newest row per job of `cron/executions.db`, which a Hermes ticker writes when it
        runs jobs; read-only, and empty when the file does not exist (nothing ran here)."""
        path = self.cron_dir / "executions.db"
        if not job_ids or not path.exists():
            return {}
        marks = ",".join("?" for _ in job_ids)
        try:
            with contextlib.closing(sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=5)) as conn:
                conn.row_factory = sqlite3.Row
                rows = conn.execute(
                    f"SELECT e.* FROM executions e WHERE e.job_id IN ({marks}) AND e.id = (SELECT e2.id "
                    "FROM executions e2 WHERE e2.job_id = e.job_id ORDER BY e2.claimed_at DESC, e2.id DESC LIMIT 1)",
                    job_ids).fetchall()
        except sqlite3.Error:  # as Hermes: no history rather than no list
            return {}
        return {row["job_id"]: dict(row) for row in rows}

    async def listing(self) -> tuple[list[dict[str, Any]], dict[str, dict[str, Any]]]:
        """Every job record and the latest execution of each (for GET /api/jobs)."""
        def both() -> tuple[list[dict[str, Any]], dict[str, dict[str, Any]]]:
            stored = self._read()
            return stored, self.latest_executions([str(job.get("id")) for job in stored if job.get("id")])
        return await asyncio.to_thread(both)

    async def read(self) -> list[dict[str, Any]]:
        """Every stored job record, in file order."""
        return await asyncio.to_thread(self._read)

    def _read(self) -> list[dict[str, Any]]:
        with self._locked():
            jobs, bare_list = self._load_marked()
            if bare_list and jobs:  # Hermes rewrites a bare list (an edit by hand) in its own format
                self._save(jobs)
            return jobs

    async def change(self, edit: Callable[[list[dict[str, Any]]], tuple[list[dict[str, Any]] | None, T]]) -> T:
        """Apply `edit` to the stored list under the lock; it returns (new list or None to keep, result)."""
        return await asyncio.to_thread(self._change, edit)

    def _change(self, edit: Callable[[list[dict[str, Any]]], tuple[list[dict[str, Any]] | None, T]]) -> T:
        with self._locked():
            jobs, result = edit(self._load())
            if jobs is not None:
                self._save(jobs)
            return result

    async def reset(self) -> None:
        """No jobs and no job output, as in a fresh home (under the lock Hermes takes too)."""
        await asyncio.to_thread(self._clear)

    def _clear(self) -> None:
        with self._locked():
            self.path.unlink(missing_ok=True)
            for entry in self.output_dir.iterdir():
                if entry.is_dir():
                    shutil.rmtree(entry)
                else:
                    entry.unlink()
