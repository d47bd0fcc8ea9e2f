"""Append-only metrics for a run: ``metrics.jsonl`` first, W&B as a mirror.

Both the trainer and the environment process append to the same file; each record is written
with a single ``write`` on a file opened in append mode, so lines from the two never interleave.
W&B is imported only when the first record is mirrored (importing it takes seconds), runs
offline unless ``WANDB_API_KEY`` is set, and a W&B failure never stops training.
"""

from __future__ import annotations

import json
import math
import os
import sys
import time
from pathlib import Path
from typing import Any


class MetricsLog:
    def __init__(
        self,
        path: Path,
        *,
        use_wandb: bool = False,
        wandb_dir: Path | None = None,
        wandb_name: str | None = None,
        wandb_project: str = "hermes-rl",
        wandb_group: str | None = None,
    ) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._use_wandb = use_wandb
        self._wandb_dir = Path(wandb_dir) if wandb_dir else self.path.parent / "wandb"
        self._wandb_name = wandb_name
        self._wandb_project = wandb_project
        self._wandb_group = wandb_group
        self._wandb_run: Any = None

    def log(self, step: int, metrics: dict[str, Any]) -> None:
        record: dict[str, Any] = {"step": int(step), "time": round(time.time(), 3)}
        for key, value in metrics.items():
            if isinstance(value, float) and not math.isfinite(value):
                value = None  # JSON has no NaN; a reader must never choke on a line
            record[key] = value
        line = json.dumps(record, separators=(",", ":")) + "\n"
        fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            os.write(fd, line.encode())
        finally:
            os.close(fd)
        if self._use_wandb:
            self._mirror(step, metrics)

    def _mirror(self, step: int, metrics: dict[str, Any]) -> None:
        try:
            if self._wandb_run is None:
                import wandb  # slow import, deliberately late

                self._wandb_dir.mkdir(parents=True, exist_ok=True)
                mode = "online" if os.environ.get("WANDB_API_KEY") else "offline"
                self._wandb_run = wandb.init(
                    project=self._wandb_project,
                    group=self._wandb_group,
                    name=self._wandb_name,
                    dir=str(self._wandb_dir),
                    mode=mode,
                    reinit="create_new",
                    settings=wandb.Settings(silent=True, console="off"),
                )
            self._wandb_run.log(dict(metrics), step=int(step))
        except Exception as exc:  # noqa: BLE001 - the mirror must never stop training
            print(f"W&B mirror disabled: {exc}", file=sys.stderr)
            self._use_wandb = False

    def close(self) -> None:
        """Finish the W&B run and stop W&B's service process now, while this process is in
        charge of its exit (left to interpreter exit, the service can be ended first by the
        run's supervisor, and W&B then prints a traceback into the component's log)."""
        if self._wandb_run is not None:
            try:
                import wandb

                self._wandb_run.finish()
                wandb.teardown()
            except Exception:  # noqa: BLE001
                pass
            self._wandb_run = None


def read_metrics(path: Path) -> list[dict[str, Any]]:
    """Every well-formed record of a metrics file; a torn last line is skipped."""
    records: list[dict[str, Any]] = []
    try:
        with open(path, "rb") as handle:
            for raw in handle:
                try:
                    value = json.loads(raw)
                except ValueError:
                    continue
                if isinstance(value, dict):
                    records.append(value)
    except FileNotFoundError:
        pass
    return records
