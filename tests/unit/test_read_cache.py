"""ReadCache's own rules, with a database whose change counter the test moves by hand."""

from __future__ import annotations

import asyncio

import pytest

from hermes_server.store.read_cache import ReadCache


class Counter:
    """Stands in for Database: only `change_count` is used."""

    def __init__(self) -> None:
        self.value: int | None = 1

    def change_count(self) -> int | None:
        return self.value


def cache(budget: int = 1000) -> tuple[ReadCache, Counter]:
    db = Counter()
    return ReadCache(db, budget), db  # type: ignore[arg-type]


def builder(value: bytes, calls: list[bytes], pause: float = 0.0):
    async def build() -> bytes:
        calls.append(value)
        await asyncio.sleep(pause)
        return value
    return build


def test_kept_while_unchanged_and_dropped_on_any_change() -> None:
    async def scenario() -> None:
        reads, db = cache()
        calls: list[bytes] = []
        assert await reads.get("k", builder(b"v1", calls)) == b"v1"
        assert await reads.get("k", builder(b"other", calls)) == b"v1"
        db.value = 2
        assert await reads.get("k", builder(b"v2", calls)) == b"v2"
        assert calls == [b"v1", b"v2"]
    asyncio.run(scenario())


def test_unknown_counter_or_zero_budget_always_builds() -> None:
    async def scenario() -> None:
        reads, db = cache()
        db.value = None
        calls: list[bytes] = []
        await reads.get("k", builder(b"a", calls))
        await reads.get("k", builder(b"b", calls))
        off, _ = cache(0)
        await off.get("k", builder(b"c", calls))
        await off.get("k", builder(b"d", calls))
        assert calls == [b"a", b"b", b"c", b"d"]
    asyncio.run(scenario())


def test_identical_misses_share_one_build() -> None:
    """Five misses of one key at once: the first builds, the others find its answer."""
    async def scenario() -> None:
        reads, _ = cache()
        calls: list[bytes] = []
        answers = await asyncio.gather(*(reads.get("k", builder(b"v", calls, 0.01)) for _ in range(5)))
        assert answers == [b"v"] * 5 and calls == [b"v"]
    asyncio.run(scenario())


def test_a_build_started_under_an_old_state_is_not_kept() -> None:
    async def scenario() -> None:
        reads, db = cache()
        calls: list[bytes] = []

        async def slow() -> bytes:
            db.value = 2  # a commit lands while the answer is being built
            return b"maybe-stale"

        assert await reads.get("k", slow) == b"maybe-stale"
        assert await reads.get("k", builder(b"fresh", calls)) == b"fresh"
    asyncio.run(scenario())


def test_failures_are_not_kept_and_each_waiter_tries_itself() -> None:
    async def scenario() -> None:
        reads, _ = cache()

        async def failing() -> bytes:
            await asyncio.sleep(0.01)
            raise LookupError("gone")

        results = await asyncio.gather(*(reads.get("k", failing) for _ in range(3)), return_exceptions=True)
        assert [type(r) for r in results] == [LookupError] * 3
        calls: list[bytes] = []
        assert await reads.get("k", builder(b"now", calls)) == b"now"
    asyncio.run(scenario())


def test_a_cancelled_builder_leaves_its_waiters_to_build_their_own() -> None:
    async def scenario() -> None:
        reads, _ = cache()
        calls: list[bytes] = []
        first = asyncio.ensure_future(reads.get("k", builder(b"first", calls, 1.0)))
        await asyncio.sleep(0.01)
        second = asyncio.ensure_future(reads.get("k", builder(b"second", calls, 0.01)))
        await asyncio.sleep(0.01)
        first.cancel()
        assert await second == b"second"
        with pytest.raises(asyncio.CancelledError):
            await first
    asyncio.run(scenario())


def test_builds_of_one_key_never_overlap_and_each_sees_a_fresh_state() -> None:
    """With a commit between them, waiters build again, one after the other (never side by side)."""
    async def scenario() -> None:
        reads, db = cache()
        running, overlaps, calls = [0], [0], []

        async def build() -> bytes:
            running[0] += 1
            overlaps[0] = max(overlaps[0], running[0])
            await asyncio.sleep(0.01)
            db.value = (db.value or 0) + 1  # each build is followed by a commit
            running[0] -= 1
            calls.append(1)
            return b"v"

        await asyncio.gather(*(reads.get("k", build) for _ in range(4)))
        assert overlaps[0] == 1 and len(calls) == 4
    asyncio.run(scenario())


def test_bounded_by_bytes_oldest_first_and_big_answers_not_kept() -> None:
    async def scenario() -> None:
        reads, _ = cache(100)
        calls: list[bytes] = []
        for key in "abcd":
            await reads.get(key, builder(key.encode() * 25, calls))
        await reads.get("e", builder(b"e" * 25, calls))  # over budget: "a" goes
        await reads.get("b", builder(b"B", calls))
        await reads.get("a", builder(b"A", calls))
        await reads.get("big", builder(b"x" * 26, calls))  # over a quarter of the budget
        await reads.get("big", builder(b"y" * 26, calls))
        assert calls[5:] == [b"A", b"x" * 26, b"y" * 26]
    asyncio.run(scenario())
