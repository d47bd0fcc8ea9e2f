"""Where a run's files live, derived only from the state directory and a validated run id."""

from __future__ import annotations

import functools
from dataclasses import dataclass
from pathlib import Path

from hermes_rl_mcp.runs.ids import validate_run_id


@dataclass(frozen=True)
class RunPaths:
    """The paths of one run's files. Each is worked out once per run: status and results, polled
    every few seconds, name a dozen of them per call."""

    root: Path

    @classmethod
    @functools.lru_cache(maxsize=1024)
    def of(cls, state: Path, run_id: str) -> RunPaths:
        return cls(Path(state) / "runs" / validate_run_id(run_id))

    @classmethod
    @functools.lru_cache(maxsize=1024)
    def at(cls, run_dir: str) -> RunPaths:
        """The paths of the run whose directory is ``run_dir`` (as the registry records it)."""
        return cls(Path(run_dir))

    @functools.cached_property
    def run_id(self) -> str:
        return self.root.name

    @functools.cached_property
    def state(self) -> Path:
        return self.root.parent.parent

    @functools.cached_property
    def config(self) -> Path:
        return self.root / "config.yaml"

    @functools.cached_property
    def supervisor_pid(self) -> Path:
        """``<pid> <start time>`` of the run's supervisor: how a rebuilt registry finds a live run."""
        return self.root / "supervisor.pid"

    @functools.cached_property
    def logs(self) -> Path:
        return self.root / "logs"

    def log(self, component: str) -> Path:
        return self.logs / f"{component}.log"

    @functools.cached_property
    def metrics(self) -> Path:
        return self.root / "metrics.jsonl"

    @functools.cached_property
    def checkpoints_index(self) -> Path:
        return self.root / "checkpoints.jsonl"

    @functools.cached_property
    def checkpoints(self) -> Path:
        return self.root / "checkpoints"

    @functools.cached_property
    def lineage(self) -> Path:
        """Present only in a resumed run: the run and checkpoint it started from."""
        return self.root / "resumed_from.json"

    @functools.cached_property
    def wandb(self) -> Path:
        return self.root / "wandb"

    @functools.cached_property
    def stall(self) -> Path:
        """The supervisor's stall report, present only while the run's step is not advancing."""
        return self.root / "stall.json"

    @functools.cached_property
    def notes(self) -> Path:
        """Notes the components leave for status and results (one JSON object per line)."""
        return self.root / "notes.jsonl"
