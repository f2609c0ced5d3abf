"""Scenarios of structured runs (`/v1/runs`) and the Responses API (`/v1/responses`).

The request table (126 steps), kept in one file so the whole set reads top to bottom. Slow,
slowly streamed and approval turns, and the run cap, need a model that can be told to be slow
or to run a tool (the oracle's scriptable mock, hermes-server's script agent playing
`SLOW_SCRIPT`): `agent="slow"` steps, which `verify` never sends. Run and response ids come from
each side's own answers (`capture`, `{name}`).
Masks: clocks, durations, generated ids, token counts, message row ids and the agent's
words, keeping the `[n=K]` count of messages the model saw (`masks.Runs`), so what each turn
was shown is compared too (D9).
"""

from __future__ import annotations

import json
from typing import Any

from hermes_server.contract.masks import CALL, OUTPUT_MSG, RESP, RUN, UUID, Masks, Runs
from hermes_server.contract.steps import Builder, Names, Need, Step

WRITES, CHAT, MORE = Need.WRITES, Need.CHAT, Need.MORE_TURNS
# `created` is the chat completion object's clock second: two servers answer in the same second only by chance.
MASKS = Masks(timestamps=frozenset({"timestamp", "created", "created_at", "updated_at", "started_at", "ended_at",
                                    "last_active", "duration"}),
              counters=frozenset({"input_tokens", "output_tokens", "total_tokens", "api_call_count",
                                  "message_count"}),
              ids=(RUN, RESP, OUTPUT_MSG, CALL, UUID), seen=True, row_ids=True)
# D10: the events hermes-server adds to a Responses stream (0.19.0 sends none of them).
CONTENT_PART_EVENTS = ("response.content_part.added", "response.content_part.done")
DROP = 'echo DROP TABLE probe_issue11'
APPROVE = f'approve [[tool=terminal:{{"command": "{DROP}"}}]]'

# What hermes-server's script agent plays for the scriptable mock's slow, streamed and approval turns.
SLOW_SCRIPT = {"turns": [
    {"match": "[[delay=6]]", "steps": [{"sleep": 6}], "reply": "ECHO-REPLY to: slow [n=1]"},
    {"match": "[[delay=", "steps": [{"sleep": 2.5}], "reply": "ECHO-REPLY to: slow [n=1]"},
    {"match": "[[chunkdelay=", "steps": [  # ten words, 0.4 s apart, as the mock streams them
        step for word in "ECHO-REPLY to: stream slowly please, with many more words [n=1]".split(" ")
        for step in ({"sleep": 0.4}, {"delta": word if word == "ECHO-REPLY" else " " + word})]},
    {"match": "[[tool=terminal", "steps": [
        {"tool": "terminal", "args": {"command": DROP}, "preview": DROP, "approval": {"pattern_key": "SQL DROP"},
         "result": json.dumps({"output": "DROP TABLE probe_issue11", "exit_code": 0, "error": None})},
        {"sleep": 0.3}],  # the oracle's model call after the tool
     "reply": "TOOL-DONE: done"},
    {"reply": "ECHO-REPLY to: scripted [n=1]"},
]}


def normaliser() -> Runs:
    return Runs(MASKS)


def without_content_parts(shape: dict[str, Any]) -> dict[str, Any]:
    """A stream's form without D10's events (their sequence numbers are masked, so nothing shifts)."""
    return {**shape, "events": [event for event in shape.get("events", []) if event[0] not in CONTENT_PART_EVENTS]}


def scenarios(n: Names) -> list[Step]:
    c = Builder(n)
    i = n.id

    def post(name: str, path: str, body: Any, **kwargs: Any) -> None:
        c.add(name, "POST", path, body, **kwargs)

    def get(name: str, path: str, **kwargs: Any) -> None:
        c.add(name, "GET", path, **kwargs)

    status = ("completed", "failed", "cancelled")
    c.section("a structured run: its status, its events, the session it leaves", WRITES, CHAT)
    post("run submit", "/v1/runs", {"input": "hello run", "model": "my-model"}, capture="r1")
    get("run completed status", "/v1/runs/{r1}", wait=status)
    get("run events, late first subscriber", "/v1/runs/{r1}/events")
    get("run events again: queue gone", "/v1/runs/{r1}/events")
    get("run status after its queue went", "/v1/runs/{r1}")
    get("run session row", "/api/sessions/{r1}")
    get("run messages", "/api/sessions/{r1}/messages")
    post("stop a finished run", "/v1/runs/{r1}/stop", None)
    post("approval on a finished run", "/v1/runs/{r1}/approval", {"choice": "once"})
    c.section("runs with a session, history and structured input", WRITES, MORE)
    post("run with session and history", "/v1/runs", {
        "input": "with history", "session_id": i("runs-explicit"),
        "conversation_history": [{"role": "user", "content": "earlier"}, {"role": "assistant", "content": "ok"}]},
        capture="r2", headers={"X-Hermes-Session-Key": i("scope-1")})
    get("run with history done", "/v1/runs/{r2}", wait=status)
    post("second run on the same session", "/v1/runs", {"input": "again", "session_id": i("runs-explicit")},
         capture="r3")
    get("second run done", "/v1/runs/{r3}", wait=status)
    get("explicit session messages", f"/api/sessions/{i('runs-explicit')}/messages")
    post("multi-message input", "/v1/runs", {"input": [
        {"role": "user", "content": "first"}, {"role": "assistant", "content": [{"type": "text", "text": "a"}]},
        {"role": "user", "content": "last"}]}, capture="r4")
    get("multi-message input done", "/v1/runs/{r4}", wait=status)
    post("list-of-parts input", "/v1/runs", {"input": [{"role": "user", "content": [
        {"type": "input_text", "text": "one"}, {"type": "text", "text": "two"}]}]}, capture="r6")
    get("list-of-parts input done", "/v1/runs/{r6}", wait=status)
    get("list-of-parts stored row", "/api/sessions/{r6}/messages")
    post("unknown previous_response_id is ignored", "/v1/runs", {"input": "x", "previous_response_id": "resp_nope"},
         capture="r5")
    get("run with unknown previous done", "/v1/runs/{r5}", wait=status)

    c.section("runs that are refused, and unknown run ids", WRITES)
    body: Any
    for name, body in (("no input", {}), ("empty input list", {"input": []}), ("input object", {"input": {"a": 1}}),
                       ("empty last content", {"input": [{"role": "user", "content": ""}]}),
                       ("history not a list", {"input": "x", "conversation_history": "no"}),
                       ("history entry without content", {"input": "x", "conversation_history": [{"role": "u"}]})):
        post(f"run {name}", "/v1/runs", body)
    post("run invalid JSON", "/v1/runs", b"{", safe=True)
    post("run body not an object", "/v1/runs", b"[1]", deviation="D6", safe=True)
    post("run input ending in a string", "/v1/runs", {"input": ["bare"]}, deviation="D6")
    post("run without key", "/v1/runs", {"input": "x"}, auth=None, safe=True)
    post("run session key too long", "/v1/runs", {"input": "x"}, headers={"X-Hermes-Session-Key": n.fill("k", 257)})
    get("unknown run status", "/v1/runs/run_nope", safe=True)
    get("unknown run events (after ~1 s)", "/v1/runs/run_nope/events", safe=True)
    post("stop unknown run", "/v1/runs/run_nope/stop", None, safe=True)
    post("approve unknown run", "/v1/runs/run_nope/approval", {"choice": "once"}, safe=True)
    get("runs list is not served", "/v1/runs", listing=True, safe=True)

    c.section("stopping a run: before the model answers, mid-stream", WRITES)
    stop = {"agent": "slow", "retry": "stop"}
    post("slow run", "/v1/runs", {"input": "slow one [[delay=2.5]]"}, capture="s1", pause=0.4, **stop)
    get("slow run is running", "/v1/runs/{s1}", **stop)
    post("stop the slow run", "/v1/runs/{s1}/stop", None, **stop)
    get("stopping status", "/v1/runs/{s1}", live=True, **stop)
    post("stop it twice", "/v1/runs/{s1}/stop", b"{}", live=True, **stop)
    get("stopped run events", "/v1/runs/{s1}/events", agent="slow")
    get("cancelled status", "/v1/runs/{s1}", agent="slow", wait=status)
    get("stopped run messages", "/api/sessions/{s1}/messages", agent="slow")
    post("slowly streamed run", "/v1/runs", {"input": "stream slowly please, with many more words [[chunkdelay=0.4]]"},
         agent="slow", capture="s2", pause=1.6)
    post("stop mid-stream", "/v1/runs/{s2}/stop", None, agent="slow")
    get("mid-stream stop events", "/v1/runs/{s2}/events", agent="slow")
    get("mid-stream stop session", "/api/sessions/{s2}", agent="slow", wait=None)

    c.section("a run that asks for approval: the choices, the refusals, a stop while waiting", WRITES)
    post("run that asks for approval", "/v1/runs", {"input": APPROVE}, agent="slow", capture="a1")
    get("waiting for approval", "/v1/runs/{a1}", agent="slow", wait=("waiting_for_approval",))
    post("approval bad JSON", "/v1/runs/{a1}/approval", b"{", agent="slow")
    post("approval bad choice", "/v1/runs/{a1}/approval", {"choice": "maybe"}, agent="slow")
    post("approval without choice", "/v1/runs/{a1}/approval", {}, agent="slow")
    post("approval body not an object", "/v1/runs/{a1}/approval", b'["deny"]', agent="slow", deviation="D6")
    post("approval deny (case and spaces)", "/v1/runs/{a1}/approval", {"choice": " DENY "}, agent="slow")
    post("approval again: none pending", "/v1/runs/{a1}/approval", {"choice": "deny"}, agent="slow")
    get("denied run completes", "/v1/runs/{a1}", agent="slow", wait=status)
    get("denied run events", "/v1/runs/{a1}/events", agent="slow")
    post("second approval run", "/v1/runs", {"input": APPROVE}, agent="slow", capture="a2")
    get("second waiting", "/v1/runs/{a2}", agent="slow", wait=("waiting_for_approval",))
    post("approve all", "/v1/runs/{a2}/approval", {"choice": "approve", "all": "yes"}, agent="slow")
    get("approved run completes", "/v1/runs/{a2}", agent="slow", wait=status)
    get("approved run events", "/v1/runs/{a2}/events", agent="slow")
    post("third approval run", "/v1/runs", {"input": APPROVE}, agent="slow", capture="a3")
    get("third waiting", "/v1/runs/{a3}", agent="slow", wait=("waiting_for_approval",))
    post("stop while waiting", "/v1/runs/{a3}/stop", None, agent="slow")
    get("stop while waiting events", "/v1/runs/{a3}/events", agent="slow")
    get("stop while waiting status", "/v1/runs/{a3}", agent="slow", wait=status)

    c.section("the cap on live agent work (429 on runs, responses and chat completions)", WRITES)
    for k in range(10):
        post(f"cap run {k + 1}", "/v1/runs", {"input": f"cap {k} [[delay=6]]"}, agent="slow")
    post("11th run: 429", "/v1/runs", {"input": "one too many"}, agent="slow")
    post("bad JSON while full: 429 first", "/v1/runs", b"{", agent="slow")
    post("responses while full", "/v1/responses", {"input": "x"}, agent="slow")
    post("chat completions while full", "/v1/chat/completions", {"messages": [{"role": "user", "content": "x"}]},
         agent="slow", pause=12.0)

    c.section("a Responses turn, chained by previous_response_id, and what the chain stores", WRITES, CHAT)
    post("response plain", "/v1/responses", {"input": "first question", "model": "custom-model"}, capture="p1",
         headers={"X-Hermes-Session-Key": i("key-a")})
    get("response get", "/v1/responses/{p1}")
    post("response chained", "/v1/responses", {"input": "second question", "previous_response_id": "{p1}",
                                               "instructions": "be brief"}, capture="p2")
    post("response chained again", "/v1/responses", {"input": "third", "previous_response_id": "{p2}"},
         capture="p3", deviation="D9")
    get("chain session messages", "/api/sessions/{p1_session}/messages", deviation="D9")
    c.section("Responses turns: explicit history, named conversations, store: false, several inputs",
              WRITES, MORE)
    post("response history wins over previous", "/v1/responses", {
        "input": "q", "previous_response_id": "{p1}",
        "conversation_history": [{"role": "user", "content": "h1"}, {"role": "assistant", "content": "h2"}]})
    post("conversation one", "/v1/responses", {"input": "conv one", "conversation": i("diff-conv")}, capture="c1")
    post("conversation two", "/v1/responses", {"input": "conv two", "conversation": i("diff-conv")}, capture="c2")
    post("conversation three", "/v1/responses", {"input": "conv three", "conversation": i("diff-conv")},
         deviation="D9")
    post("store false", "/v1/responses", {"input": "not stored", "store": "false"}, capture="n1")
    get("get a store:false response", "/v1/responses/{n1}")
    post("multi input", "/v1/responses", {"input": ["a", {"role": "assistant", "content": "b"}, "c"]})
    c.section("a streamed Responses turn: its events", WRITES, CHAT)
    post("response stream", "/v1/responses", {"input": "stream me", "stream": True}, deviation="D10")
    c.section("streamed and idempotent Responses turns", WRITES, MORE)
    post("response stream chained", "/v1/responses", {"input": "stream two", "stream": True,
                                                      "previous_response_id": "{p1}"}, deviation="D10")
    post("response stream store false", "/v1/responses", {"input": "no store", "stream": True, "store": False},
         deviation="D10")
    post("idempotent 1", "/v1/responses", {"input": "idem"}, headers={"Idempotency-Key": i("diff-k1")})
    post("idempotent 2", "/v1/responses", {"input": "idem"}, headers={"Idempotency-Key": i("diff-k1")})

    c.section("Responses requests that are refused", WRITES)
    for name, body in (("no input", {}), ("input null", {"input": None}), ("input int", {"input": 5}),
                       ("empty string", {"input": ""}), ("empty list", {"input": []}),
                       ("file part", {"input": [{"role": "user", "content": [{"type": "input_file", "file_id": "f"}]}]}),
                       ("bad image", {"input": [{"role": "user", "content": [
                           {"type": "input_image", "image_url": "ftp://x"}]}]}),
                       ("conversation and previous", {"input": "x", "conversation": i("c"),
                                                      "previous_response_id": "r"}),
                       ("unknown previous", {"input": "x", "previous_response_id": "resp_nope"}),
                       ("history not a list", {"input": "x", "conversation_history": "no"}),
                       ("history bad entry", {"input": "x", "conversation_history": [{"role": "user"}]}),
                       ("last message blank", {"input": [{"role": "user", "content": "x"},
                                                         {"role": "assistant", "content": "  "}]})):
        post(f"response {name}", "/v1/responses", body)
    post("response invalid JSON", "/v1/responses", b"{", safe=True)
    post("response body not an object", "/v1/responses", b'["x"]', deviation="D6", safe=True)
    post("response conversation object", "/v1/responses", {"input": "x", "conversation": {"a": 1}}, deviation="D6")
    post("response without key", "/v1/responses", {"input": "x"}, auth=None, safe=True)
    post("response session key too long", "/v1/responses", {"input": "x"},
         headers={"X-Hermes-Session-Key": n.fill("k", 257)})
    get("get unknown response", "/v1/responses/resp_nope", safe=True)

    c.section("reading and deleting a stored response", WRITES, CHAT)
    c.add("delete response", "DELETE", "/v1/responses/{p2}")
    c.add("delete it again", "DELETE", "/v1/responses/{p2}")
    get("get after delete", "/v1/responses/{p2}")
    post("chain from a deleted response", "/v1/responses", {"input": "x", "previous_response_id": "{p2}"})
    c.add("delete without key", "DELETE", "/v1/responses/{p1}", auth=None)
    get("list responses: 405", "/v1/responses", listing=True)
    c.add("put a response: 405", "PUT", "/v1/responses/{p1}")
    get("profile mirror get", "/p/x/v1/responses/{p1}")
    return c.steps
