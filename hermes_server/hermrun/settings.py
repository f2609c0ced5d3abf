"""The typed keys of herm.run's option values in `Settings.extras` (config.py's `Extra`).

Its option rows (hermrun/dialect.py) fill them and its handlers read them
(`settings.extra(ALLOWANCE)`), so a misspelt name fails the type check.
"""

from __future__ import annotations

from hermes_server.config import Extra

SWITCH: Extra[bool] = Extra("herm_run")
# None: clients send the bearer key in x-api-key.
KEY: Extra[str | None] = Extra("herm_run_key")
# The default per-agent, per-subject conversation allowance of one fixed window, and its length.
ALLOWANCE: Extra[int] = Extra("herm_run_allowance")
WINDOW_SECONDS: Extra[float] = Extra("herm_run_window_seconds")
