"""The behaviour contract: Hermes's answers as scenarios, run against any two servers and compared.

One corpus of scenarios (`sessions`, `chat`, `completions`, `jobs`, `runs`, `probes`), each step
naming the behaviour in users' words, the normalisation it needs and what it needs of the server
it runs on. `tools/oracle_*_diff.py` play it against upstream 0.19.0 and hermes-server;
`hermes-server verify URL` plays the part a live server can take against that server and
in-process references of hermes-server (docs/verify.md). Stdlib only: it is a client.
"""
