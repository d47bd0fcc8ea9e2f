"""A run's learning curves as a small PNG, for clients that show images.

matplotlib is imported here, on the first picture asked for, never when the server starts: it
costs about a second and most calls never want a picture.
"""

from __future__ import annotations

import io
import textwrap
import threading
from collections import OrderedDict

from hermes_rl_mcp.runs.models import MetricSeries, RunResults

# What each panel draws, in this order; a metric the run never logged is left out.
SCORE_METRICS = {
    "train/percent_correct": ("train % correct", "#1f77b4"),
    "eval/percent_correct": ("eval % correct", "#d62728"),
    "reward/mean": ("reward (mean)", "#2ca02c"),
}
LOSS_METRICS = {"train/loss": ("train loss", "#7f7f7f")}
BEST_EVAL = "eval/percent_correct"
STATUS_COLOURS = {"completed": "#2ca02c", "failed": "#d62728", "stopped": "#ff7f0e", "stopping": "#ff7f0e"}
SIZE_INCHES = (8.0, 3.4)
DPI = 90
# pyplot keeps global state; pictures may be asked for from several worker threads at once.
_DRAWING = threading.Lock()
# What a picture shows; an unchanged run (every call on a finished one) is not drawn again.
_DRAWN_FIELDS = {"run_id", "environment", "status", "reason", "step", "total_steps", "history", "best_metrics"}
_REMEMBERED = 16
_drawn_pictures: OrderedDict[bytes, bytes] = OrderedDict()


def curves_png(results: RunResults) -> bytes:
    """The run's score and loss curves against step, best eval marked, status in the title."""
    key = _key(results)
    png = _drawn(key)
    if png is not None:
        return png
    png = _draw(results)
    with _DRAWING:
        _drawn_pictures[key] = png
        while len(_drawn_pictures) > _REMEMBERED:
            _drawn_pictures.popitem(last=False)
    return png


def drawn_png(results: RunResults) -> bytes | None:
    """The picture of ``results`` if it was drawn before; None if drawing it is still to do."""
    return _drawn(_key(results))


def _drawn(key: bytes) -> bytes | None:
    with _DRAWING:
        if key in _drawn_pictures:
            _drawn_pictures.move_to_end(key)
            return _drawn_pictures[key]
    return None


def _key(results: RunResults) -> bytes:
    return results.model_dump_json(include=_DRAWN_FIELDS).encode()


def _draw(results: RunResults) -> bytes:
    import matplotlib

    matplotlib.use("Agg", force=False)
    from matplotlib.figure import Figure

    with _DRAWING:
        figure = Figure(figsize=SIZE_INCHES, dpi=DPI)
        score_axes, loss_axes = figure.subplots(1, 2, width_ratios=(3, 2))
        # Fixed margins: a layout engine would draw the figure twice to find them.
        top = 0.80 if results.status in ("failed", "stopped") and results.reason else 0.88
        figure.subplots_adjust(left=0.06, right=0.985, bottom=0.13, top=top, wspace=0.16)
        # The step axis runs to the planned end, so a running run shows how far it has come.
        last_step = max(results.total_steps or 0, results.step, 1)
        _panel(score_axes, results.history, SCORE_METRICS, "score", last_step)
        _mark_best_eval(score_axes, results)
        _panel(loss_axes, results.history, LOSS_METRICS, "loss", last_step)
        figure.suptitle(_title(results), fontsize=10, color=STATUS_COLOURS.get(results.status, "#222222"))
        buffer = io.BytesIO()
        figure.savefig(buffer, format="png", dpi=DPI, metadata={"Software": None})
    return _quantized(buffer.getvalue())


def _panel(axes, history: dict[str, MetricSeries], metrics: dict[str, tuple[str, str]], what: str, last_step: int) -> None:
    drawn = 0
    for name, (label, colour) in metrics.items():
        series = history.get(name)
        if series is None or not series.steps:
            continue
        axes.plot(series.steps, series.values, color=colour, linewidth=1.6, label=label,
                  marker="o" if len(series.steps) < 12 else None, markersize=3)
        drawn += 1
    axes.set_xlabel("step", fontsize=8)
    axes.tick_params(labelsize=7)
    axes.grid(alpha=0.3)
    if drawn:
        axes.set_xlim(0, last_step)
        axes.legend(fontsize=7, loc="best", frameon=False)
    else:
        axes.text(0.5, 0.5, f"no {what} logged yet", ha="center", va="center", fontsize=9, color="#777777",
                  transform=axes.transAxes)
        axes.set_xticks([])
        axes.set_yticks([])


def _mark_best_eval(axes, results: RunResults) -> None:
    best = results.best_metrics.get(BEST_EVAL)
    if best is None:
        return
    axes.plot([best.step], [best.value], marker="*", markersize=13, color="#d62728", linestyle="none", zorder=5)
    # The label goes above the star, on the side with room: a best eval at the end is common.
    left_of_star = best.step > max(results.total_steps or 0, results.step, 1) / 2
    axes.annotate(f"best eval {best.value:.2f} @ step {best.step}", (best.step, best.value),
                  xytext=(-8 if left_of_star else 8, 7), textcoords="offset points", fontsize=7, color="#d62728",
                  ha="right" if left_of_star else "left")


def _title(results: RunResults) -> str:
    steps = f"step {results.step}" + (f"/{results.total_steps}" if results.total_steps else "")
    title = f"{results.environment} · run {results.run_id} · {results.status.upper()} · {steps}"
    if results.status in ("failed", "stopped") and results.reason:
        title += "\n" + textwrap.shorten(results.reason, 110, placeholder="…")
    return title


def _quantized(png: bytes) -> bytes:
    """The same picture with a 64-colour palette: a third of the size, and flat lines lose nothing."""
    from PIL import Image

    with Image.open(io.BytesIO(png)) as image:
        palette = image.convert("RGB").quantize(colors=64)
        out = io.BytesIO()
        palette.save(out, format="PNG", optimize=True)
    return out.getvalue()
