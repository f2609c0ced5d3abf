"""The herm.run hosted-sessions API as a second dialect of hermes-server (off by default).

herm.run's `/v1/sessions` and `/v1/sandboxes/warm` are a different API from Hermes's
`/api/sessions`: camelCase fields, `x-api-key` authentication, a per-subject
conversation allowance, agent versions. This package holds all of it, apart from the
Hermes code: pure rules (`errors`, `requests`, `rules`, `projection`), storage in its
own `herm-run.db` beside state.db (`store`), and the HTTP side (`envelope`, `routes`,
`openapi`). Its fixture key and control route belong to test control
(testing/hermrun.py), which imports this package, never the other way round. docs/herm-run.md is the contract it implements.
"""
