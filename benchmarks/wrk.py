"""Driving one route with wrk: the Lua request generator and the parsed result.

Every request wrk sends comes from a small generated Lua script: it rotates
through a list of existing session ids and stamps a run-unique counter into
ids and titles, so creates never collide and patches never repeat a title.
The script's `done` hook prints the figures as one JSON line, so nothing
depends on wrk's human-readable output.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

_DONE = r"""
done = function(summary, latency, requests)
  local e = summary.errors
  io.write(string.format(
    'WRKJSON {"requests": %d, "duration_us": %d, "p50_us": %d, "p99_us": %d, "max_us": %d,'
    .. ' "connect": %d, "read": %d, "write": %d, "status": %d, "timeout": %d}\n',
    summary.requests, summary.duration, latency:percentile(50), latency:percentile(99), latency.max,
    e.connect, e.read, e.write, e.status, e.timeout))
end
"""


@dataclass(frozen=True)
class Call:
    """One kind of request: method, path and body, with `{id}` and `{n}` placeholders."""

    method: str
    path: str
    body: str | None = None

    def expand(self, session_id: str, unique: str) -> tuple[str, str | None]:
        """(path, body) as wrk would send them for `session_id`, with `unique` for `{n}`'s tag and count."""
        def fill(text: str) -> str:
            return text.replace("{id}", session_id).replace("{n}", unique)
        return fill(self.path), None if self.body is None else fill(self.body)


@dataclass(frozen=True)
class Result:
    """What one wrk run measured."""

    requests: int
    seconds: float
    p50_ms: float
    p99_ms: float
    max_ms: float
    errors: int
    bad_status: int

    @property
    def rps(self) -> float:
        return self.requests / self.seconds if self.seconds else 0.0

    def as_dict(self) -> dict[str, float]:
        return {"rps": round(self.rps, 1), "p50_ms": self.p50_ms, "p99_ms": self.p99_ms, "max_ms": self.max_ms,
                "requests": self.requests, "errors": self.errors, "bad_status": self.bad_status}


def _lua_string(text: str) -> str:
    return json.dumps(text)  # a JSON string literal is a valid Lua string literal for ASCII text


def _lua_template(text: str) -> str:
    """Turn `{id}`/`{n}` placeholders into Lua concatenation of `id`/`n` values."""
    parts: list[str] = []
    rest = text
    while rest:
        cut = min((i for i in (rest.find("{id}"), rest.find("{n}")) if i >= 0), default=-1)
        if cut < 0:
            parts.append(_lua_string(rest))
            break
        if cut:
            parts.append(_lua_string(rest[:cut]))
        if rest.startswith("{id}", cut):
            parts.append("id")
            rest = rest[cut + 4:]
        else:
            parts.append("(tag .. n)")
            rest = rest[cut + 3:]
    return " .. ".join(parts) or '""'


def lua_script(calls: list[Call], ids: list[str], tag: str, key: str | None, same_id: bool = False) -> str:
    """A wrk script cycling through `calls` (a weighted mix when repeated) and `ids`.

    The id moves on with every request, or with every cycle of `calls` when `same_id`
    (so a write and the read after it touch the same session).
    """
    step = f"math.floor(n / {len(calls)})" if same_id else "n"
    headers = ['["Content-Type"] = "application/json"']
    if key:
        headers.append(f'["Authorization"] = {_lua_string("Bearer " + key)}')
    lines = [
        "local ids = {" + ", ".join(_lua_string(i) for i in ids) + "}",
        f"local tag = {_lua_string(tag)}",
        "local headers = {" + ", ".join(headers) + "}",
        "local n = 0",
        "local k = 0",
        "setup = function(thread) k = k + 1; thread:set('tid', k) end",
        "init = function(args) tag = tag .. 't' .. (tid or 0) .. '_' end",
        "request = function()",
        "  n = n + 1",
        f"  local id = ids[({step} * 7919) % #ids + 1]",
        f"  local pick = n % {len(calls)}",
    ]
    for index, call in enumerate(calls):
        body = "nil" if call.body is None else _lua_template(call.body)
        lines.append(f"  if pick == {index} then return wrk.format({_lua_string(call.method)}, "
                     f"{_lua_template(call.path)}, headers, {body}) end")
    lines.append("end")
    return "\n".join(lines) + "\n" + _DONE


def ensure_wrk() -> str:
    """Path of wrk; installs the Debian package when missing and running as root, else explains."""
    found = shutil.which("wrk")
    if found:
        return found
    if os.geteuid() == 0 and shutil.which("apt-get"):
        print("bench: wrk not found; installing the Debian package (apt-get install wrk)", file=sys.stderr)
        subprocess.run(["apt-get", "update", "-qq"], check=True)
        subprocess.run(["apt-get", "install", "-y", "-qq", "wrk"], check=True)
        found = shutil.which("wrk")
        if found:
            return found
    raise SystemExit(
        "bench: needs wrk (https://github.com/wg/wrk) on PATH.\n"
        "  Debian/Ubuntu: sudo apt-get install wrk    macOS: brew install wrk\n"
        "Run `make bench` as root on Debian to have it installed automatically."
    )


def run(url: str, calls: list[Call], ids: list[str], *, tag: str, key: str | None, connections: int,
        seconds: float, wrk_path: str = "wrk", same_id: bool = False) -> Result:
    """One wrk run of `seconds` at `connections` (one wrk thread: it leaves the cores to the server)."""
    with tempfile.NamedTemporaryFile("w", suffix=".lua", delete=False) as handle:
        handle.write(lua_script(calls, ids, tag, key, same_id))
        script = handle.name
    try:
        proc = subprocess.run(
            [wrk_path, "-t1", f"-c{connections}", f"-d{max(1, round(seconds))}s", "--timeout", "15s",
             "-s", script, url],
            capture_output=True, text=True, timeout=seconds + 60,
        )
    finally:
        Path(script).unlink(missing_ok=True)
    for line in proc.stdout.splitlines():
        if line.startswith("WRKJSON "):
            data = json.loads(line[len("WRKJSON "):])
            return Result(
                requests=data["requests"],
                seconds=data["duration_us"] / 1e6,
                p50_ms=data["p50_us"] / 1000,
                p99_ms=data["p99_us"] / 1000,
                max_ms=data["max_us"] / 1000,
                errors=data["connect"] + data["read"] + data["write"] + data["timeout"],
                bad_status=data["status"],
            )
    raise RuntimeError(f"wrk gave no result (exit {proc.returncode}):\n{proc.stdout}\n{proc.stderr}")
