"""Several runs side by side: final and best metrics, steps, wall time, and the config fields that differ."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from hermes_rl_mcp.runs.control import get_results, kept_results
from hermes_rl_mcp.runs.errors import InvalidArgument, UnknownRun
from hermes_rl_mcp.runs.file_memo import Kept
from hermes_rl_mcp.runs.ids import validate_run_id
from hermes_rl_mcp.runs.models import BestMetric, ResumedFrom, RunResults, RunState

MIN_RUNS, MAX_RUNS = 2, 10
# Values every run gets afresh (its id, directory, ports, W&B name): they always differ and say
# nothing about how the runs were configured.
_PER_RUN_FIELDS = frozenset({
    "run.id", "run.dir", "run.api_url", "run.policy_url", "run.resumed_from", "run.profile",
    "env.rollout_server_url", "env.wandb_name", "trainer.port", "openai.base_url", "openai.api_key",
})


class ComparedRun(BaseModel):
    run_id: str
    environment: str
    backend: str
    status: RunState
    step: int
    total_steps: int | None
    wall_seconds: float = Field(description="From creation to the end (or to now, for a run still going).")
    final_metrics: dict[str, float] = Field(description="Last value of each compared metric.")
    best_metrics: dict[str, BestMetric] = Field(description="Best value of each compared metric and its step.")
    resumed_from: ResumedFrom | None = None


class RunComparison(BaseModel):
    runs: list[ComparedRun] = Field(description="In the order asked for.")
    metrics: list[str] = Field(description="The compared metrics: accuracy, reward, return and loss metrics any run logged.")
    leaders: dict[str, str] = Field(description="For each compared metric, the run with the best value (max, or min for losses).")
    differing_config: dict[str, dict[str, Any]] = Field(
        description="Each config field whose value is not the same in every run: run id -> value (null where a run lacks it)."
    )
    same_config_fields: int = Field(description="How many config fields are equal in every run (per-run addresses and ids left out).")


def compare_runs(run_ids: list[str], *, state: Path | None = None) -> RunComparison:
    """Compare 2 to 10 runs; an unknown id is refused, naming it."""
    ids = _checked_ids(run_ids)
    results = []
    for run_id in ids:
        try:
            results.append(get_results(run_id, state=state))
        except UnknownRun:
            raise UnknownRun(
                f"no run with id {run_id!r} is recorded; list the runs to see the ids there are (nothing was compared)"
            ) from None
    return _compared(results)


def kept_comparison(run_ids: list[str], *, state: Path | None = None) -> RunComparison | None:
    """``compare_runs`` when every run's results are kept and unchanged (see
    ``control.kept_results``): the same comparison object as before; else None. Cheap: a caller
    that must not wait may ask."""
    ids = _checked_ids(run_ids)
    try:
        results = [kept_results(run_id, state=state) for run_id in ids]
    except UnknownRun:
        return None  # compare_runs says which
    if any(r is None for r in results):
        return None
    return _compared(results)  # type: ignore[arg-type]


# By the results objects compared (held in the value, so their ids stay theirs): a finished run's
# results object stays the same while its files do.
_KEPT_COMPARISONS: Kept[tuple[int, ...], tuple[list[RunResults], RunComparison]] = Kept(8)


def _compared(results: list[RunResults]) -> RunComparison:
    key = tuple(map(id, results))
    kept = _KEPT_COMPARISONS.get(key)
    if kept is not None and all(a is b for a, b in zip(kept[0], results)):
        return kept[1]
    return _KEPT_COMPARISONS.put(key, (results, _comparison(results)))[1]


def _comparison(results: list[RunResults]) -> RunComparison:
    metrics = sorted({name for result in results for name in result.best_metrics})
    compared = [
        ComparedRun(
            run_id=r.run_id, environment=r.environment, backend=r.backend, status=r.status, step=r.step,
            total_steps=r.total_steps, wall_seconds=r.duration_seconds,
            final_metrics={m: r.final_metrics[m] for m in metrics if m in r.final_metrics},
            best_metrics={m: r.best_metrics[m] for m in metrics if m in r.best_metrics},
            resumed_from=r.resumed_from,
        )
        for r in results
    ]
    differing, same = _config_differences({r.run_id: _flatten(r.config) for r in results})
    return RunComparison(
        runs=compared, metrics=metrics, leaders=_leaders(compared, metrics), differing_config=differing,
        same_config_fields=same,
    )


def parse_run_ids(text: str) -> list[str]:
    """``id1,id2,...`` as a resource URI carries them."""
    return [part.strip() for part in text.split(",") if part.strip()]


def _checked_ids(run_ids: list[str]) -> list[str]:
    if not isinstance(run_ids, list) or not MIN_RUNS <= len(run_ids) <= MAX_RUNS:
        count = len(run_ids) if isinstance(run_ids, list) else "no list of"
        raise InvalidArgument(f"compare takes {MIN_RUNS} to {MAX_RUNS} run ids, not {count}; rl_list_runs shows the ids there are")
    ids = [validate_run_id(run_id) for run_id in run_ids]
    repeated = sorted({run_id for run_id in ids if ids.count(run_id) > 1})
    if repeated:
        raise InvalidArgument(f"run ids must differ; given more than once: {', '.join(repeated)}")
    return ids


def _flatten(config: dict[str, Any]) -> dict[str, Any]:
    """``section.field -> value``; the openai section is a list of servers, compared by its first."""
    flat: dict[str, Any] = {}
    for section, values in config.items():
        if isinstance(values, list):
            values = values[0] if values and isinstance(values[0], dict) else {}
        if not isinstance(values, dict):
            continue
        for key, value in values.items():
            name = f"{section}.{key}"
            if name not in _PER_RUN_FIELDS:
                flat[name] = value
    return flat


def _config_differences(configs: dict[str, dict[str, Any]]) -> tuple[dict[str, dict[str, Any]], int]:
    names = sorted({name for flat in configs.values() for name in flat})
    differing: dict[str, dict[str, Any]] = {}
    same = 0
    for name in names:
        values = {run_id: flat.get(name) for run_id, flat in configs.items()}
        if len({json.dumps(value, sort_keys=True, default=str) for value in values.values()}) > 1:
            differing[name] = values
        else:
            same += 1
    return differing, same


def _leaders(runs: list[ComparedRun], metrics: list[str]) -> dict[str, str]:
    leaders: dict[str, str] = {}
    for metric in metrics:
        ranked = [(run.best_metrics[metric], run.run_id) for run in runs if metric in run.best_metrics]
        if not ranked:
            continue
        pick = min if ranked[0][0].goal == "min" else max
        leaders[metric] = pick(ranked, key=lambda entry: entry[0].value)[1]
    return leaders


__all__ = ["MAX_RUNS", "MIN_RUNS", "ComparedRun", "RunComparison", "compare_runs", "kept_comparison", "parse_run_ids"]
