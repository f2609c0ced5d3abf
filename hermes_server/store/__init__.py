"""Everything SQL lives here: the only package that knows the state.db schema."""
