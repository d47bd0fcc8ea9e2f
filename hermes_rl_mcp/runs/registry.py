"""The run registry: one SQLite file (WAL mode) in the state directory.

One row per run, one row per component of a run, and an append-only event log of every status
transition with its time and reason. Supervisors write their own run's rows; servers and the
CLI read, and write only to mark a run whose supervisor died or to record a stop.

Every status change is a conditional update (``WHERE status IN (...)``) inside one transaction
with its event, so two writers racing (a supervisor finishing while a server marks it failed)
cannot both win, and a terminal status is never overwritten.
"""

from __future__ import annotations

import fcntl
import functools
import logging
import os
import sqlite3
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any, TypeVar

from hermes_rl_mcp.runs.errors import DiskFull
from hermes_rl_mcp.runs.file_memo import identity
from hermes_rl_mcp.runs.ids import validate_run_id
from hermes_rl_mcp.runs.recovery import recorded_run, run_directories
from hermes_rl_mcp.runs.states import ACTIVE_STATES
from hermes_rl_mcp.storage import disk_full_message, is_out_of_space

REGISTRY_FILE = "registry.sqlite3"
SCHEMA_VERSION = 1

_SCHEMA = """
CREATE TABLE IF NOT EXISTS runs (
    id TEXT PRIMARY KEY,
    environment TEXT NOT NULL,
    backend TEXT NOT NULL,
    status TEXT NOT NULL,
    reason TEXT,
    failed_component TEXT,
    exit_code INTEGER,
    log_tail TEXT,
    created_at REAL NOT NULL,
    started_at REAL,
    ended_at REAL,
    updated_at REAL NOT NULL,
    run_dir TEXT NOT NULL,
    total_steps INTEGER,
    step INTEGER NOT NULL DEFAULT 0,
    supervisor_pid INTEGER,
    supervisor_start INTEGER,
    wandb_url TEXT
);
CREATE INDEX IF NOT EXISTS runs_status ON runs(status);
CREATE TABLE IF NOT EXISTS components (
    run_id TEXT NOT NULL,
    name TEXT NOT NULL,
    state TEXT NOT NULL,
    pid INTEGER,
    start_time INTEGER,
    port INTEGER,
    exit_code INTEGER,
    updated_at REAL NOT NULL,
    PRIMARY KEY (run_id, name)
);
CREATE TABLE IF NOT EXISTS events (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    run_id TEXT NOT NULL,
    time REAL NOT NULL,
    status TEXT NOT NULL,
    reason TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS events_run ON events(run_id, id);
CREATE TABLE IF NOT EXISTS status_cache (
    run_id TEXT PRIMARY KEY,
    computed_at REAL NOT NULL,
    payload TEXT NOT NULL
);
"""

_RUN_COLUMNS = frozenset(
    {
        "reason", "failed_component", "exit_code", "log_tail", "started_at", "ended_at", "total_steps",
        "step", "supervisor_pid", "supervisor_start", "wandb_url",
    }
)
_COMPONENT_COLUMNS = frozenset({"state", "pid", "start_time", "port", "exit_code"})


SCHEMA_LOCK_TIMEOUT_S = 10.0
REPAIR_LOCK_FILE = "registry.lock"
LOST_ROW = "it was missing from the run registry and was re-recorded from its directory"
# SQLite's names for a file that is not (or no longer) a sound database.
_DAMAGE = frozenset({"SQLITE_CORRUPT", "SQLITE_NOTADB"})

log = logging.getLogger(__name__)
T = TypeVar("T")
SHARED_PER_THREAD = 4
_per_thread = threading.local()


def _is_read_error(exc: BaseException) -> bool:
    return str(getattr(exc, "sqlite_errorname", "")).startswith("SQLITE_IOERR")


def is_damage(exc: BaseException) -> bool:
    return isinstance(exc, sqlite3.DatabaseError) and getattr(exc, "sqlite_errorname", None) in _DAMAGE


def _guarded(method: Callable[..., T]) -> Callable[..., T]:
    @functools.wraps(method)
    def guarded(self: Registry, *args: Any, **kwargs: Any) -> T:
        return self._use(lambda _db: method(self, *args, **kwargs))

    return guarded


class Registry:
    """A connection to the registry; cheap to open, meant to be opened per operation.

    The run directories are the record and this file indexes them. A registry that is missing,
    emptied or damaged is rebuilt from them: a damaged file is moved aside first, and
    the log and the rebuilt runs' reasons and event logs say what happened and where it went.
    A long-lived connection (a supervisor's) follows a rebuilt file to its new inode.
    """

    def __init__(self, state: Path) -> None:
        self.state = Path(state)
        self.path = self.state / REGISTRY_FILE
        self._kept_open = False
        self.path.parent.mkdir(parents=True, exist_ok=True)
        try:
            self._db = self._open()
        except (OSError, sqlite3.OperationalError) as exc:
            if is_out_of_space(exc):
                raise DiskFull(disk_full_message(self.path, "the run registry could not be opened")) from exc
            raise

    # -- opening and repair --------------------------------------------------------------------

    def _connect(self, path: Path | None = None) -> sqlite3.Connection:
        # Autocommit mode: transactions are opened explicitly where several writes must agree.
        # timeout= is SQLite's busy timeout: a writer in another process is waited for, up to 10 s.
        db = sqlite3.connect(path or self.path, timeout=10.0, isolation_level=None, check_same_thread=False)
        db.row_factory = sqlite3.Row
        return db

    def _open(self) -> sqlite3.Connection:
        if _size(self.path) in (None, 0):
            return self._repair(None)  # missing or emptied: created under the lock, from the run directories
        db = self._connect()
        try:
            if db.execute("PRAGMA user_version").fetchone()[0] < SCHEMA_VERSION:
                self._create_schema(db)
            db.execute("PRAGMA synchronous = NORMAL")
        except sqlite3.DatabaseError as exc:
            db.close()
            if not is_damage(exc):
                raise
            return self._repair(f"{exc}")
        self._seen_file = identity(self.path)
        return db

    def _repair(self, damage: str | None) -> sqlite3.Connection:
        """Replace a missing, empty or damaged registry by one rebuilt from the run directories."""
        seen = _inode(self.path)
        with open(self.state / REPAIR_LOCK_FILE, "a") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)  # one repairer; the others then open its result
            try:
                size = _size(self.path)
                if damage is not None and _inode(self.path) != seen or damage is None and size:
                    return self._open()  # repaired or created meanwhile by another process
                aside = None
                if size is not None:
                    aside = self.path.with_name(f"{REGISTRY_FILE}.damaged-{time.strftime('%Y%m%d-%H%M%S')}-{os.getpid()}")
                    for suffix in ("", "-wal", "-shm"):  # a stale WAL must not be replayed into the new file
                        if Path(f"{self.path}{suffix}").exists():
                            os.replace(f"{self.path}{suffix}", f"{aside}{suffix}")
                directories = run_directories(self.state)
                if aside is None and not directories:
                    db = self._connect()  # a first start: nothing was lost
                    self._create_schema(db)
                    db.execute("PRAGMA synchronous = NORMAL")
                    self._seen_file = identity(self.path)
                    return db
                what = "was missing" if aside is None else (
                    "was empty (0 bytes)" if size == 0 else f"was damaged ({damage})")
                where = "" if aside is None else f" and was moved to {aside}"
                note = (
                    f"the run registry {self.path} {what}{where}; it was rebuilt from the "
                    f"{len(directories)} run directories in {self.state / 'runs'}"
                )
                self._rebuild(directories, note)
                log.warning(note)
                db = self._connect()
                db.execute("PRAGMA synchronous = NORMAL")
                self._seen_file = identity(self.path)
                return db
            finally:
                fcntl.flock(lock, fcntl.LOCK_UN)

    def _rebuild(self, directories: list[Path], note: str) -> None:
        """Write a registry of ``directories`` beside the real one, then move it into place.

        Another process that opens the registry meanwhile must not find a valid file with some
        runs not yet recorded: it would record them itself, as runs the registry had lost.
        While the file is missing it waits on the repair lock instead.
        """
        building = self.path.with_name(f"{REGISTRY_FILE}.rebuilding-{os.getpid()}")
        for suffix in ("", "-wal", "-shm"):
            Path(f"{building}{suffix}").unlink(missing_ok=True)
        self._db = self._connect(building)  # adopt() records into self._db
        try:
            self._create_schema(self._db)
            for root in directories:
                self.adopt(root, note)
            self._db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            self._db.close()  # the last connection: its WAL is folded in and removed
            os.replace(building, self.path)
        except BaseException:
            self._db.close()
            for suffix in ("", "-wal", "-shm"):
                Path(f"{building}{suffix}").unlink(missing_ok=True)
            raise

    def _use(self, operation: Callable[[sqlite3.Connection], T]) -> T:
        """Run one operation; a registry found damaged on the way is rebuilt and the operation retried."""
        # The file changed outside this connection since it last looked: rebuilt by another process
        # (a new inode), or written over in place. SQLite in WAL mode notices neither on an open
        # connection (it trusts its page cache while the WAL index is unchanged), so open afresh.
        # Commits go to the WAL and leave the file as it is; a checkpoint into it (every few MB of
        # commits) costs one reopen.
        if identity(self.path) != self._seen_file:
            self._db.close()
            self._db = self._open()
        try:
            try:
                return operation(self._db)
            except sqlite3.DatabaseError as exc:
                if not (is_damage(exc) or _is_read_error(exc)):
                    raise
                if _is_read_error(exc):
                    # A file cut short under an open connection reads as an I/O error, not as
                    # damage: try once more on a fresh connection before calling it damage.
                    self._db.close()
                    self._db = self._open()
                    try:
                        return operation(self._db)
                    except sqlite3.DatabaseError as again:
                        if not (is_damage(again) or _is_read_error(again)):
                            raise
                        exc = again
                self._db.close()
                self._db = self._repair(str(exc))
                return operation(self._db)
        except sqlite3.OperationalError as exc:
            if is_out_of_space(exc):
                raise DiskFull(disk_full_message(self.path, "the run registry could not be written")) from exc
            raise

    def _create_schema(self, db: sqlite3.Connection) -> None:
        # Two processes (or threads) opening a fresh registry at once race here, and SQLite
        # answers a journal-mode change it cannot lock for with "database is locked" at once,
        # without waiting on the busy timeout: retry until one of them has created it.
        deadline = time.monotonic() + SCHEMA_LOCK_TIMEOUT_S
        while True:
            try:
                db.execute("PRAGMA journal_mode = WAL")  # persistent: set once per file
                db.executescript(f"BEGIN IMMEDIATE;{_SCHEMA}PRAGMA user_version = {SCHEMA_VERSION};COMMIT;")
                return
            except sqlite3.OperationalError as exc:
                if db.in_transaction:
                    db.execute("ROLLBACK")
                if "locked" not in str(exc) and "busy" not in str(exc) or time.monotonic() > deadline:
                    raise
            time.sleep(0.01)
            if db.execute("PRAGMA user_version").fetchone()[0] >= SCHEMA_VERSION:
                return  # the other opener created it

    def adopt(self, root: Path, why: str) -> dict[str, Any] | None:
        """Record the run in directory ``root`` from its files, unless it is recorded already."""
        row = recorded_run(root, why)
        columns = list(row)
        with self._transaction():
            inserted = self._db.execute(
                f"INSERT OR IGNORE INTO runs ({', '.join(columns)}) VALUES ({', '.join('?' for _ in columns)})",
                list(row.values()),
            ).rowcount
            if inserted:
                self._db.execute(
                    "INSERT INTO events (run_id, time, status, reason) VALUES (?, ?, ?, ?)",
                    (row["id"], row["updated_at"], row["status"], row["reason"]),
                )
        found = self._db.execute("SELECT * FROM runs WHERE id = ?", (row["id"],)).fetchone()
        return dict(found) if found is not None else None

    @classmethod
    def shared(cls, state: Path) -> Registry:
        """This thread's connection to the registry in ``state``, kept open from call to call.

        A server answers many short reads, and opening a connection costs more than most of
        them. ``with Registry.shared(...)`` leaves it open; a rebuilt file is still followed (see
        ``_use``). Each thread has its own few, the least recently used closed first.
        """
        kept: OrderedDict[Path, Registry] = _per_thread.__dict__.setdefault("registries", OrderedDict())
        key = Path(state)
        registry = kept.get(key)
        if registry is None:
            registry = kept[key] = cls(key)
            registry._kept_open = True
            while len(kept) > SHARED_PER_THREAD:
                kept.popitem(last=False)[1].close()
        else:
            kept.move_to_end(key)
        return registry

    def close(self) -> None:
        self._db.close()

    def __enter__(self) -> Registry:
        return self

    def __exit__(self, *exc: object) -> None:
        if not self._kept_open:
            self.close()

    # -- runs ----------------------------------------------------------------------------------

    @_guarded
    def insert_run(
        self, *, run_id: str, environment: str, backend: str, run_dir: str, total_steps: int | None, reason: str
    ) -> float:
        now = time.time()
        with self._transaction():
            # A reader may have adopted the fresh directory before this row was written: replace that.
            self._db.execute("DELETE FROM runs WHERE id = ?", (run_id,))
            self._db.execute("DELETE FROM events WHERE run_id = ?", (run_id,))
            self._db.execute(
                "INSERT INTO runs (id, environment, backend, status, reason, created_at, updated_at, run_dir, total_steps)"
                " VALUES (?, ?, ?, 'starting', ?, ?, ?, ?, ?)",
                (run_id, environment, backend, reason, now, now, run_dir, total_steps),
            )
            self._db.execute(
                "INSERT INTO events (run_id, time, status, reason) VALUES (?, ?, 'starting', ?)", (run_id, now, reason)
            )
        return now

    @_guarded
    def get_run(self, run_id: str) -> dict[str, Any] | None:
        row = self._db.execute("SELECT * FROM runs WHERE id = ?", (run_id,)).fetchone()
        if row is not None:
            return dict(row)
        root = self.state / "runs" / validate_run_id(run_id)
        if root.is_dir():  # on disk, so it exists: the registry lost it
            return self.adopt(root, LOST_ROW)
        return None

    @_guarded
    def list_runs(self, status: str | None = None) -> list[dict[str, Any]]:
        if status is None:
            rows = self._db.execute("SELECT * FROM runs ORDER BY created_at DESC, id DESC").fetchall()
        else:
            rows = self._db.execute(
                "SELECT * FROM runs WHERE status = ? ORDER BY created_at DESC, id DESC", (status,)
            ).fetchall()
        return [dict(r) for r in rows]

    @_guarded
    def update_run(self, run_id: str, **fields: Any) -> None:
        """Set bookkeeping fields (pids, step...) without touching the status."""
        unknown = set(fields) - _RUN_COLUMNS
        if unknown:
            raise ValueError(f"not run columns: {sorted(unknown)}")
        if not fields:
            return
        assignments = ", ".join(f"{name} = ?" for name in fields)
        self._db.execute(
            f"UPDATE runs SET {assignments}, updated_at = ? WHERE id = ?", (*fields.values(), time.time(), run_id)
        )

    @_guarded
    def transition(
        self,
        run_id: str,
        status: str,
        reason: str,
        *,
        from_states: Iterable[str] = ACTIVE_STATES,
        **fields: Any,
    ) -> bool:
        """Move the run to ``status`` if it is in one of ``from_states``; log the event. True if moved."""
        unknown = set(fields) - _RUN_COLUMNS
        if unknown:
            raise ValueError(f"not run columns: {sorted(unknown)}")
        allowed = tuple(from_states)
        now = time.time()
        assignments = "".join(f", {name} = ?" for name in fields)
        marks = ", ".join("?" for _ in allowed)
        with self._transaction():
            cursor = self._db.execute(
                f"UPDATE runs SET status = ?, reason = ?, updated_at = ?{assignments}"
                f" WHERE id = ? AND status IN ({marks})",
                (status, reason, now, *fields.values(), run_id, *allowed),
            )
            if cursor.rowcount != 1:
                return False
            self._db.execute(
                "INSERT INTO events (run_id, time, status, reason) VALUES (?, ?, ?, ?)", (run_id, now, status, reason)
            )
        return True

    @_guarded
    def events(self, run_id: str) -> list[dict[str, Any]]:
        rows = self._db.execute(
            "SELECT time, status, reason FROM events WHERE run_id = ? ORDER BY id", (run_id,)
        ).fetchall()
        return [dict(r) for r in rows]

    # -- components ----------------------------------------------------------------------------

    @_guarded
    def set_component(self, run_id: str, name: str, **fields: Any) -> None:
        unknown = set(fields) - _COMPONENT_COLUMNS
        if unknown:
            raise ValueError(f"not component columns: {sorted(unknown)}")
        now = time.time()
        columns = ["run_id", "name", "updated_at", *fields]
        values = [run_id, name, now, *fields.values()]
        if "state" not in fields:
            columns.append("state")
            values.append("pending")
        updates = ", ".join(f"{c} = excluded.{c}" for c in ["updated_at", *fields])
        self._db.execute(
            f"INSERT INTO components ({', '.join(columns)}) VALUES ({', '.join('?' for _ in columns)})"
            f" ON CONFLICT (run_id, name) DO UPDATE SET {updates}",
            values,
        )

    @_guarded
    def components(self, run_id: str) -> dict[str, dict[str, Any]]:
        rows = self._db.execute("SELECT * FROM components WHERE run_id = ?", (run_id,)).fetchall()
        return {r["name"]: dict(r) for r in rows}

    # -- status cache (operator's minimum interval) --------------------------------------------

    @_guarded
    def cached_status(self, run_id: str) -> tuple[float, str] | None:
        row = self._db.execute("SELECT computed_at, payload FROM status_cache WHERE run_id = ?", (run_id,)).fetchone()
        return (row[0], row[1]) if row is not None else None

    @_guarded
    def store_status(self, run_id: str, computed_at: float, payload: str) -> None:
        self._db.execute(
            "INSERT INTO status_cache (run_id, computed_at, payload) VALUES (?, ?, ?)"
            " ON CONFLICT (run_id) DO UPDATE SET computed_at = excluded.computed_at, payload = excluded.payload",
            (run_id, computed_at, payload),
        )

    # -- helpers -------------------------------------------------------------------------------

    def _transaction(self) -> _Transaction:
        return _Transaction(self._db)


class _Transaction:
    def __init__(self, db: sqlite3.Connection) -> None:
        self._db = db

    def __enter__(self) -> None:
        self._db.execute("BEGIN IMMEDIATE")

    def __exit__(self, exc_type: object, *rest: object) -> None:
        if exc_type is None:
            self._db.execute("COMMIT")
            return
        try:
            self._db.execute("ROLLBACK")
        except sqlite3.DatabaseError:
            pass  # a damaged file may refuse even this; the original error says why


def _size(path: Path) -> int | None:
    try:
        return path.stat().st_size
    except FileNotFoundError:
        return None


def _inode(path: Path) -> int | None:
    try:
        return path.stat().st_ino
    except FileNotFoundError:
        return None
