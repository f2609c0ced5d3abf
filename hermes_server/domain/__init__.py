"""Pure rules of the session API: no I/O, unit-tested directly."""
