"""Allow `python -m hermes_server`."""

from hermes_server.cli import main

raise SystemExit(main())
