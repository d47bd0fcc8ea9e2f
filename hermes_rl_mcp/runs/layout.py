"""Where a run's files live, derived only from the state directory and a validated run id."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from hermes_rl_mcp.runs.ids import validate_run_id


@dataclass(frozen=True)
class RunPaths:
    root: Path

    @classmethod
    def of(cls, state: Path, run_id: str) -> RunPaths:
        return cls(Path(state) / "runs" / validate_run_id(run_id))

    @property
    def run_id(self) -> str:
        return self.root.name

    @property
    def state(self) -> Path:
        return self.root.parent.parent

    @property
    def config(self) -> Path:
        return self.root / "config.yaml"

    @property
    def supervisor_pid(self) -> Path:
        """``<pid> <start time>`` of the run's supervisor: how a rebuilt registry finds a live run."""
        return self.root / "supervisor.pid"

    @property
    def logs(self) -> Path:
        return self.root / "logs"

    def log(self, component: str) -> Path:
        return self.logs / f"{component}.log"

    @property
    def metrics(self) -> Path:
        return self.root / "metrics.jsonl"

    @property
    def checkpoints_index(self) -> Path:
        return self.root / "checkpoints.jsonl"

    @property
    def checkpoints(self) -> Path:
        return self.root / "checkpoints"

    @property
    def lineage(self) -> Path:
        """Present only in a resumed run: the run and checkpoint it started from."""
        return self.root / "resumed_from.json"

    @property
    def wandb(self) -> Path:
        return self.root / "wandb"

    @property
    def stall(self) -> Path:
        """The supervisor's stall report, present only while the run's step is not advancing."""
        return self.root / "stall.json"

    @property
    def notes(self) -> Path:
        """Notes the components leave for status and results (one JSON object per line)."""
        return self.root / "notes.jsonl"
