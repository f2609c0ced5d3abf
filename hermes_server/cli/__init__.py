"""The `hermes-server` command line (`hermes-server` script and `python -m hermes_server`).

`main.py` holds the parser and `main`; each command has a module of its own: `serve.py`
(with the socket in `listen.py`, the kept key in `keyfile.py`, uvicorn's transport in
`transport.py`), `seed.py` and `healthcheck.py`; `options.py` is the table of options.
`main` is imported on call, so a dialect's module can import `cli.options` for its own
option rows while the parser imports the dialects.
"""

from __future__ import annotations

from collections.abc import Sequence


def main(argv: Sequence[str] | None = None) -> int:
    from hermes_server.cli.main import main as run

    return run(argv)
