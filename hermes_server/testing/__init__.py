"""Test control: the fixture format and loading, faults, the request journal, the /_fixture/ routes.

Everything here is an extension that is off by default (docs/differences.md,
"Extensions"). The core never imports this package: `app.py` composes it in when
`serve --fixture-api` asks for it, and `serve --fixture` and `hermes-server seed`
use only the fixture format and loading (`model`, `validate`, `load`).
"""
