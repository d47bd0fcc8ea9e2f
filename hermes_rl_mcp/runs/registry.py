"""The run registry: one SQLite file (WAL mode) in the state directory.

One row per run, one row per component of a run, and an append-only event log of every status
transition with its time and reason. Supervisors write their own run's rows; servers and the
CLI read, and write only to mark a run whose supervisor died or to record a stop.

Every status change is a conditional update (``WHERE status IN (...)``) inside one transaction
with its event, so two writers racing (a supervisor finishing while a server marks it failed)
cannot both win, and a terminal status is never overwritten.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from hermes_rl_mcp.runs.states import ACTIVE_STATES

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


class Registry:
    """A connection to the registry; cheap to open, meant to be opened per operation."""

    def __init__(self, state: Path) -> None:
        self.path = Path(state) / REGISTRY_FILE
        self.path.parent.mkdir(parents=True, exist_ok=True)
        # Autocommit mode: transactions are opened explicitly where several writes must agree.
        # timeout= is SQLite's busy timeout: a writer in another process is waited for, up to 10 s.
        self._db = sqlite3.connect(self.path, timeout=10.0, isolation_level=None, check_same_thread=False)
        self._db.row_factory = sqlite3.Row
        if self._db.execute("PRAGMA user_version").fetchone()[0] < SCHEMA_VERSION:
            self._create_schema()
        self._db.execute("PRAGMA synchronous = NORMAL")

    def _create_schema(self) -> None:
        # Two processes (or threads) opening a fresh registry at once race here, and SQLite
        # answers a journal-mode change it cannot lock for with "database is locked" at once,
        # without waiting on the busy timeout: retry until one of them has created it.
        deadline = time.monotonic() + SCHEMA_LOCK_TIMEOUT_S
        while True:
            try:
                self._db.execute("PRAGMA journal_mode = WAL")  # persistent: set once per file
                self._db.executescript(f"BEGIN IMMEDIATE;{_SCHEMA}PRAGMA user_version = {SCHEMA_VERSION};COMMIT;")
                return
            except sqlite3.OperationalError as exc:
                if self._db.in_transaction:
                    self._db.execute("ROLLBACK")
                if "locked" not in str(exc) and "busy" not in str(exc) or time.monotonic() > deadline:
                    raise
            time.sleep(0.01)
            if self._db.execute("PRAGMA user_version").fetchone()[0] >= SCHEMA_VERSION:
                return  # the other opener created it

    def close(self) -> None:
        self._db.close()

    def __enter__(self) -> Registry:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- runs ----------------------------------------------------------------------------------

    def insert_run(
        self, *, run_id: str, environment: str, backend: str, run_dir: str, total_steps: int | None, reason: str
    ) -> float:
        now = time.time()
        with self._transaction():
            self._db.execute(
                "INSERT INTO runs (id, environment, backend, status, reason, created_at, updated_at, run_dir, total_steps)"
                " VALUES (?, ?, ?, 'starting', ?, ?, ?, ?, ?)",
                (run_id, environment, backend, reason, now, now, run_dir, total_steps),
            )
            self._db.execute(
                "INSERT INTO events (run_id, time, status, reason) VALUES (?, ?, 'starting', ?)", (run_id, now, reason)
            )
        return now

    def get_run(self, run_id: str) -> dict[str, Any] | None:
        row = self._db.execute("SELECT * FROM runs WHERE id = ?", (run_id,)).fetchone()
        return dict(row) if row is not None else None

    def list_runs(self, status: str | None = None) -> list[dict[str, Any]]:
        if status is None:
            rows = self._db.execute("SELECT * FROM runs ORDER BY created_at DESC, id DESC").fetchall()
        else:
            rows = self._db.execute(
                "SELECT * FROM runs WHERE status = ? ORDER BY created_at DESC, id DESC", (status,)
            ).fetchall()
        return [dict(r) for r in rows]

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

    def events(self, run_id: str) -> list[dict[str, Any]]:
        rows = self._db.execute(
            "SELECT time, status, reason FROM events WHERE run_id = ? ORDER BY id", (run_id,)
        ).fetchall()
        return [dict(r) for r in rows]

    # -- components ----------------------------------------------------------------------------

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

    def components(self, run_id: str) -> dict[str, dict[str, Any]]:
        rows = self._db.execute("SELECT * FROM components WHERE run_id = ?", (run_id,)).fetchall()
        return {r["name"]: dict(r) for r in rows}

    # -- status cache (operator's minimum interval) --------------------------------------------

    def cached_status(self, run_id: str) -> tuple[float, str] | None:
        row = self._db.execute("SELECT computed_at, payload FROM status_cache WHERE run_id = ?", (run_id,)).fetchone()
        return (row[0], row[1]) if row is not None else None

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
        self._db.execute("ROLLBACK" if exc_type is not None else "COMMIT")
