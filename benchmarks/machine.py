"""A description of the machine a run happened on, so figures can be compared honestly."""

from __future__ import annotations

import os
import platform
import sqlite3
import subprocess
import sys
import time
from importlib import metadata
from pathlib import Path


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def _memory_gb() -> float:
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                return round(int(line.split()[1]) / 1024 / 1024, 1)
    except OSError:
        pass
    return 0.0


def _version(package: str) -> str:
    try:
        return metadata.version(package)
    except metadata.PackageNotFoundError:
        return "absent"


def _wrk_version() -> str:
    try:
        out = subprocess.run(["wrk", "--version"], capture_output=True, text=True, timeout=10)
        return (out.stdout or out.stderr).split("[")[0].strip()
    except OSError:
        return "absent"


def describe() -> dict[str, object]:
    """CPU, cores, memory, load, and the versions that shape the numbers."""
    return {
        "date": time.strftime("%Y-%m-%d %H:%M %Z"),
        "nproc": os.cpu_count(),
        "cpu_model": _cpu_model(),
        "memory_gb": _memory_gb(),
        "load_average_at_start": [round(x, 2) for x in os.getloadavg()],
        "os": f"{platform.system()} {platform.release()}",
        "python": sys.version.split()[0],
        "sqlite": sqlite3.sqlite_version,
        "uvicorn": _version("uvicorn"),
        "starlette": _version("starlette"),
        "uvloop": _version("uvloop"),
        "httptools": _version("httptools"),
        "wrk": _wrk_version(),
    }
