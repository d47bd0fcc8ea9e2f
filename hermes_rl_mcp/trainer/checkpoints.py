"""Checkpoints of the local policy: ``checkpoints/step_<n>.npz`` plus one line each in
``checkpoints.jsonl`` (which also records the tinker backend's ``tinker://`` paths).

An archive holds the parameters (``param/<name>``), their moving average (``average/<name>``,
what evaluation served and what a served checkpoint serves), the Adam state, and a JSON ``meta``
record (step, model shape and revision, tokenizer, trainer settings), enough to load the policy
and to resume.
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from hermes_rl_mcp.trainer.adam import Adam
from hermes_rl_mcp.trainer.model import MODEL_REVISION, ModelShape, PolicyModel
from hermes_rl_mcp.trainer.tokenizer import CharTokenizer


@dataclass
class LoadedCheckpoint:
    model: PolicyModel
    step: int
    meta: dict[str, Any]
    optimizer_state: dict[str, np.ndarray]
    average: PolicyModel | None = None  # the weights' moving average, when the run kept one

    @property
    def served(self) -> PolicyModel:
        """The policy to answer with: the average when there is one, as evaluation did."""
        return self.average if self.average is not None else self.model


def save_checkpoint(
    run_dir: Path,
    step: int,
    model: PolicyModel,
    optimizer: Adam | None,
    *,
    average: PolicyModel | None = None,
    kind: str,
    extra_meta: dict[str, Any] | None = None,
) -> Path:
    """Write the archive (atomically: a reader never sees half a file) and record it."""
    if kind not in ("periodic", "final"):
        raise ValueError(f"checkpoint kind must be 'periodic' or 'final', got {kind!r}")
    directory = Path(run_dir) / "checkpoints"
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"step_{step}.npz"
    meta = {
        "step": step, "shape": model.shape.to_dict(), "model_revision": MODEL_REVISION, "tokenizer": model.tokenizer.name,
        **(extra_meta or {}),
    }
    arrays: dict[str, np.ndarray] = {f"param/{k}": v for k, v in model.params.items()}
    if average is not None:
        arrays.update({f"average/{k}": v for k, v in average.params.items()})
    if optimizer is not None:
        arrays.update(optimizer.state())
    arrays["meta"] = np.asarray(json.dumps(meta))
    partial = directory / f".step_{step}.npz.partial"
    with open(partial, "wb") as handle:
        np.savez(handle, **arrays)
    os.replace(partial, path)
    record_checkpoint(run_dir, step, str(path.resolve()), kind)
    return path


def record_checkpoint(run_dir: Path, step: int, path: str, kind: str, *, sampler_path: str | None = None) -> None:
    """One line in ``checkpoints.jsonl``; ``path`` may be a file or an engine's ``tinker://`` path."""
    if kind not in ("periodic", "final"):
        raise ValueError(f"checkpoint kind must be 'periodic' or 'final', got {kind!r}")
    record: dict[str, Any] = {"step": step, "path": path, "kind": kind, "time": round(time.time(), 3)}
    if sampler_path is not None:
        record["sampler_path"] = sampler_path
    with open(Path(run_dir) / "checkpoints.jsonl", "a", encoding="utf-8") as handle:
        handle.write(json.dumps(record) + "\n")


def load_checkpoint(path: Path) -> LoadedCheckpoint:
    """The policy (and optimiser state) stored at ``path``."""
    with np.load(Path(path), allow_pickle=False) as archive:
        meta = json.loads(str(archive["meta"]))
        params = {k.removeprefix("param/"): archive[k].copy() for k in archive.files if k.startswith("param/")}
        averaged = {k.removeprefix("average/"): archive[k].copy() for k in archive.files if k.startswith("average/")}
        optimizer_state = {k: archive[k].copy() for k in archive.files if k.startswith("adam")}
    tokenizer = CharTokenizer()
    if meta.get("tokenizer") != tokenizer.name:
        raise ValueError(f"checkpoint {path} uses tokenizer {meta.get('tokenizer')!r}, this trainer has {tokenizer.name!r}")
    if meta.get("model_revision") != MODEL_REVISION:
        raise ValueError(
            f"checkpoint {path} was saved by a different local policy model (revision {meta.get('model_revision', 1)}, "
            f"this trainer's is {MODEL_REVISION}): its parameters mean something else here; start a new run rather than resuming this one"
        )
    try:
        shape = ModelShape(**meta["shape"])
    except TypeError as exc:
        raise ValueError(f"checkpoint {path} was saved by a different local policy model ({exc})") from exc
    fields = {k: v for k, v in shape.to_dict().items() if k != "vocab_size"}
    expected = PolicyModel.initialise(tokenizer, **fields).params
    _check_layout(path, params, expected)
    if averaged:
        _check_layout(path, averaged, expected)
    model = PolicyModel(params, shape, tokenizer)
    average = PolicyModel(averaged, shape, tokenizer, model.views) if averaged else None
    return LoadedCheckpoint(model=model, step=int(meta["step"]), meta=meta, optimizer_state=optimizer_state, average=average)


def _check_layout(path: Path, params: dict[str, np.ndarray], expected: dict[str, np.ndarray]) -> None:
    for name in sorted(expected.keys() | params.keys()):
        if name not in params or name not in expected or params[name].shape != expected[name].shape:
            found = params[name].shape if name in params else "nothing"
            wanted = expected[name].shape if name in expected else "nothing"
            raise ValueError(
                f"checkpoint {path} was saved by a different local policy model: its {name} is {found}, "
                f"this trainer's is {wanted}; start a new run rather than resuming this one"
            )
