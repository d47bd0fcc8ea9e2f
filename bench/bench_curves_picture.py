"""What the curves picture costs: the first one in a fresh process (matplotlib's import included),
a warm one, and the PNG's size, for a run with many steps and for one with nothing logged.

    python bench/bench_curves_picture.py
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import time

from hermes_rl_mcp.runs.metrics import summarize
from hermes_rl_mcp.runs.models import MetricSeries, RunResults

WARM_CALLS = 20


def results_of(steps: int) -> RunResults:
    records = [{"step": s, "train/percent_correct": min(1.0, s / steps), "reward/mean": (s / steps) ** 0.5,
                "train/loss": 1.0 / s, **({"eval/percent_correct": s / steps} if s % 10 == 0 else {})}
               for s in range(1, steps + 1)]
    final, best, history = summarize(records)
    return RunResults(
        run_id="r-bench", environment="arithmetic", backend="local", status="completed", reason=None,
        created_at=0.0, ended_at=1.0, duration_seconds=1.0, step=steps, total_steps=steps, final_metrics=final,
        best_metrics=best, history={n: MetricSeries.of(p) for n, p in history.items()}, checkpoints=[],
        final_checkpoint=None, config={}, wandb={"mode": "none"}, events=[],
    )


def first_picture_seconds() -> float:
    probe = (
        "import sys, time; sys.path.insert(0, 'bench')\n"
        "from bench_curves_picture import results_of\n"
        "from hermes_rl_mcp.runs.curves_picture import curves_png\n"
        "r = results_of(500); t = time.perf_counter(); curves_png(r); print(time.perf_counter() - t)\n"
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True, timeout=120)
    return float(out.stdout.strip().splitlines()[-1])


def main() -> None:
    from hermes_rl_mcp.runs.curves_picture import curves_png

    print(f"first picture in a fresh process (imports matplotlib): {first_picture_seconds() * 1000:.0f} ms")
    for steps in (500, 0):
        results = results_of(steps)
        curves_png(results)
        timings = []
        for _ in range(WARM_CALLS):
            started = time.perf_counter()
            png = curves_png(results)
            timings.append(time.perf_counter() - started)
        print(f"{steps:>4} steps: warm picture {statistics.median(timings) * 1000:.0f} ms (median of {WARM_CALLS}), "
              f"PNG {len(png) / 1000:.1f} kB")


if __name__ == "__main__":
    main()
