"""Reads of a run's files kept while the file is unchanged.

An agent polls status and results every few seconds, and most polls find every file as it was.
A file's identity (inode, size, modification time) changes whenever it is appended to,
rewritten or replaced, so a read kept under that identity is never stale. A cached answer is
shared between callers: they must not change it.
"""

from __future__ import annotations

import functools
import os
import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from pathlib import Path
from typing import Any, Generic, TypeVar

T = TypeVar("T")
K = TypeVar("K", bound=Hashable)
V = TypeVar("V")
FileIdentity = tuple[int, int, int]


def identity(path: Path | str) -> FileIdentity | None:
    """Inode, size and modification time of ``path``; None when it is absent or unreadable."""
    try:
        found = os.stat(path)
    except OSError:
        return None
    return found.st_ino, found.st_size, found.st_mtime_ns


def while_unchanged(maxsize: int = 256) -> Callable[[Callable[..., T]], Callable[..., T]]:
    """Keep ``fn(path, *args)`` while the file at ``path`` keeps its identity (args must hash)."""

    def decorate(fn: Callable[..., T]) -> Callable[..., T]:
        @functools.lru_cache(maxsize=maxsize)
        def read(path: str, found: FileIdentity | None, *args: Any) -> T:
            return fn(Path(path), *args)

        @functools.wraps(fn)
        def cached(path: Path, *args: Any) -> T:
            text = os.fspath(path)
            return read(text, identity(text), *args)

        cached.cache_clear = read.cache_clear  # type: ignore[attr-defined]
        return cached

    return decorate


class Kept(Generic[K, V]):
    """The last ``size`` values by key, shared between threads; unlike ``lru_cache`` it can be
    asked whether a value is kept without making it."""

    def __init__(self, size: int) -> None:
        self._size = size
        self._values: OrderedDict[K, V] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: K) -> V | None:
        with self._lock:
            value = self._values.get(key)
            if value is not None:
                self._values.move_to_end(key)
            return value

    def put(self, key: K, value: V) -> V:
        with self._lock:
            self._values[key] = value
            while len(self._values) > self._size:
                self._values.popitem(last=False)
        return value
