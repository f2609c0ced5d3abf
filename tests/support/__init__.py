"""What the tests share: the server runner, the SSE reader, HTTP and envelope helpers, SQL on state.db."""
