"""The herm.run hosted-sessions API as a second dialect of hermes-server (off by default).

herm.run's `/v1/sessions` and `/v1/sandboxes/warm` are a different API from Hermes's
`/api/sessions`: camelCase fields, `x-api-key` authentication, a per-subject
conversation allowance, agent versions. This package holds all of it, apart from the
Hermes code: pure rules (`errors`, `requests`, `rules`, `projection`), storage in its
own `herm-run.db` beside state.db (`store`), the HTTP side (`envelope`, `routes`,
`openapi`), its fixture key and control route (`fixture`, test control), and the unit the
server registers (`dialect`: option rows, switch, build). docs/herm-run.md is the
contract it implements.
"""
