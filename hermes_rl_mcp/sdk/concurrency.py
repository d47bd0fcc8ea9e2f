"""Bounded concurrency for evaluation and rollout fan-out."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Iterable
from typing import TypeVar

T = TypeVar("T")


async def gather_bounded(awaitables: Iterable[Awaitable[T]], limit: int) -> list[T]:
    """Await everything with at most ``limit`` in flight; results keep the input order."""
    gate = asyncio.Semaphore(max(1, limit))

    async def run(awaitable: Awaitable[T]) -> T:
        async with gate:
            return await awaitable

    return list(await asyncio.gather(*(run(a) for a in awaitables)))
