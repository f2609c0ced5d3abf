"""The herm.run hosted-sessions API as a second dialect of hermes-server (off by default).

herm.run's `/v1/sessions` and `/v1/sandboxes/warm` are a different API from Hermes's
`/api/sessions`: camelCase fields, `x-api-key` authentication, a per-subject
conversation allowance, agent versions. This package holds all of it, apart from the
Hermes code: pure rules (`errors`, `requests`, `rules`, `projection`), storage in its
own `herm-run.db` beside state.db (`store`), the HTTP side (`envelope`, `routes`,
`openapi`), its fixture key and control route (`fixture`, test control), and the unit the
server registers (`dialect`: option rows, switch, build). Here: the typed keys of its
option values, which its declaration fills and its handlers read. docs/herm-run.md is the
contract it implements.
"""

from __future__ import annotations

from hermes_server.config import Extra

# The dialect's option values in `Settings.extras`: its option rows (`dialect`) fill them and its
# handlers read them (`settings.extra(ALLOWANCE)`), so a misspelt name fails the type check.
SWITCH: Extra[bool] = Extra("herm_run")
# None: clients send the bearer key in x-api-key.
KEY: Extra[str | None] = Extra("herm_run_key")
# The default per-agent, per-subject conversation allowance of one fixed window, and its length.
ALLOWANCE: Extra[int] = Extra("herm_run_allowance")
WINDOW_SECONDS: Extra[float] = Extra("herm_run_window_seconds")
