"""hermes-server: a standalone emulator of the Hermes Agent persistent-session API."""

__version__ = "0.1.0"

# The upstream release whose behaviour this project reproduces; reported by /health.
UPSTREAM_VERSION = "0.19.0"
