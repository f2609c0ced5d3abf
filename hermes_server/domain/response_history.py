"""The history of a Responses turn (or a run's): what the model sees, what is stored for the next one.

The model sees the history and the user message with each run of consecutive user
messages merged into one (plain texts joined by a blank line; a message whose content has
parts stays apart), as 0.19.0's agent repairs a conversation before calling its model, so
two user messages in a row never reach a provider that wants roles to alternate. Runs
give their model the turn the same way.

What is stored is the chain once, in order: the history as the request gave it, the user
message, the turn's messages. 0.19.0 stores something else (docs/differences.md, D9),
which `--upstream-quirks` reproduces: its agent marks every message it was given as
persisted and merges consecutive user messages in those very objects, and the server
then keeps the agent's transcript only when it still starts with the history it gave;
otherwise it stores the history, the user message and the whole transcript after it.
A first turn (no history) never passes that test, so its user message is stored twice,
and the merges make every later turn fail it too, repeating the chain each time.
"""

from __future__ import annotations

import copy
from typing import Any

# The key 0.19.0's agent adds to each message it has written to state.db.
PERSISTED_MARK = "_db_persisted"


def _merge_users(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """`messages` with each user message that follows another one folded into it, in place.

    The surviving dicts are the given objects (a merged one has its content changed),
    which is what makes 0.19.0's stored history come out as it does.
    """
    merged: list[dict[str, Any]] = []
    for msg in messages:
        prev = merged[-1] if merged else None
        if prev is not None and prev.get("role") == "user" and msg.get("role") == "user":
            before, after = prev.get("content", ""), msg.get("content", "")
            if isinstance(before, str) and isinstance(after, str):
                prev["content"] = f"{before}\n\n{after}" if before and after else before or after
                continue
        merged.append(msg)
    return merged


def model_turn(history: list[dict[str, Any]], user_message: Any) -> tuple[list[dict[str, Any]], Any]:
    """The history and the user message as the model is given them (copies; nothing given is changed).

    The turn's own message is folded into a user message right before it too, so the model of
    `input: ["a", "b"]` sees one message, `a`, a blank line and `b`; state.db still stores `b`.
    """
    merged = _merge_users([*(dict(msg) for msg in history), {"role": "user", "content": user_message}])
    return merged[:-1], merged[-1]["content"]


def _upstream_history(history: list[dict[str, Any]], user_message: Any,
                      turn_messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """What 0.19.0 stores after a turn on `history` (D9), replayed on copies of the messages."""
    given = copy.deepcopy(history)
    for msg in given:
        msg[PERSISTED_MARK] = True
    transcript = _merge_users([*given, {"role": "user", "content": user_message, PERSISTED_MARK: True}])
    transcript += [{**copy.deepcopy(msg), PERSISTED_MARK: True} for msg in turn_messages]
    current = {"role": "user", "content": user_message}
    if transcript[:len(given) + 1] == [*given, current] or (given and transcript[:len(given)] == given):
        return transcript
    return [*given, current, *transcript]


def stored_history(history: list[dict[str, Any]], user_message: Any,
                   turn_messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """What a chained request continues from, after a turn on `history` (before the model's merge)."""
    return [*history, {"role": "user", "content": user_message}, *turn_messages]


def upstream_stored_history(history: list[dict[str, Any]], user_message: Any,
                            turn_messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """`stored_history` as 0.19.0 keeps it (D9, under `--upstream-quirks`)."""
    return _upstream_history(history, user_message, turn_messages)
