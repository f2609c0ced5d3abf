"""Use cases that run an agent turn: the turn itself, idempotent replays, turn tasks, test hooks.

Shared by every route family that chats (session chat, chat completions), so each
leaves the same rows for a turn. Knows storage and agents, never HTTP.
"""
