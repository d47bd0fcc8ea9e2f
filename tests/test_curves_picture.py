"""The learning-curves picture: a valid, small PNG for every kind of run, and an image block in
rl_get_results and rl_check_status next to unchanged structured results, in both protocol eras."""

from __future__ import annotations

import base64
import io

import anyio
import pytest
from PIL import Image

from hermes_rl_mcp.runs.curves_picture import curves_png
from hermes_rl_mcp.runs.metrics import summarize
from hermes_rl_mcp.runs.models import MetricSeries, RunResults, RunStatus

from mcp_helpers import ERAS, in_memory, refusal_text, structured
from test_mcp_runs import start_short_run, wait_for_status

MAX_PNG_BYTES = 60_000
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def results_of(status: str, steps: int, reason: str | None = None) -> RunResults:
    """Results as the core builds them, from metrics shaped like a real run's."""
    records = []
    for step in range(1, steps + 1):
        record = {"step": step, "time": 1000.0 + step, "train/percent_correct": min(1.0, 0.05 * step),
                  "reward/mean": 0.1 * step ** 0.5, "train/loss": 1.0 / step}
        if step % 5 == 0:
            record["eval/percent_correct"] = min(1.0, 0.04 * step)
        records.append(record)
    final, best, history = summarize(records)
    return RunResults(
        run_id="r-test", environment="reverse_text", backend="local", status=status, reason=reason,
        created_at=1000.0, ended_at=None, duration_seconds=float(steps), step=steps, total_steps=40,
        final_metrics=final, best_metrics=best, history={n: MetricSeries.of(p) for n, p in history.items()},
        checkpoints=[], final_checkpoint=None, config={}, wandb={"mode": "none"}, events=[],
    )


def assert_small_png(png: bytes) -> Image.Image:
    assert png.startswith(PNG_SIGNATURE)
    assert 2_000 < len(png) <= MAX_PNG_BYTES, f"{len(png)} bytes"
    Image.open(io.BytesIO(png)).verify()  # checks every chunk's CRC
    image = Image.open(io.BytesIO(png))
    image.load()
    assert image.format == "PNG" and image.size[0] >= 600 and image.size[1] >= 250
    return image


@pytest.mark.parametrize(("status", "steps", "reason"), [
    ("completed", 40, "all 40 steps done"),
    ("running", 17, None),
    ("failed", 9, "trainer exited with code 1: CUDA out of memory while allocating the optimizer state"),
    ("stopped", 12, "stop requested"),
    ("starting", 0, None),  # nothing logged yet
])
def test_the_picture_is_a_small_valid_png_for_every_kind_of_run(status: str, steps: int, reason: str | None) -> None:
    image = assert_small_png(curves_png(results_of(status, steps, reason)))
    assert len(image.getcolors(256) or []) > 3, "the picture is blank"


def test_a_failed_run_looks_different_from_a_completed_one() -> None:
    """The status is drawn on the picture: same curves, other title."""
    completed = curves_png(results_of("completed", 20))
    failed = curves_png(results_of("failed", 20, "trainer exited with code 1"))
    assert completed != failed


def image_blocks(result) -> list:
    return [block for block in result.content if block.type == "image"]


@pytest.mark.parametrize("era", ERAS)
def test_results_and_status_carry_the_picture_beside_unchanged_structured_results(era: str) -> None:
    async def scenario() -> None:
        async with in_memory(era) as client:
            run_id = (await start_short_run(client))["run_id"]
            # A picture of a run that has logged nothing yet, or only a little.
            early = await client.call_tool("rl_check_status", {"run_id": run_id, "picture": True})
            RunStatus.model_validate(structured(early))
            (block,) = image_blocks(early)
            assert block.mime_type == "image/png"
            assert_small_png(base64.b64decode(block.data))
            assert image_blocks(await client.call_tool("rl_check_status", {"run_id": run_id})) == []

            await wait_for_status(client, run_id, {"completed"}, timeout=120)
            with_picture = await client.call_tool("rl_get_results", {"run_id": run_id})
            without = await client.call_tool("rl_get_results", {"run_id": run_id, "picture": False})
            results = structured(with_picture)
            assert results == structured(without)
            RunResults.model_validate(results)
            assert len(with_picture.content) == 2 and image_blocks(without) == []
            (block,) = image_blocks(with_picture)
            assert_small_png(base64.b64decode(block.data))

            text = refusal_text(await client.call_tool("rl_get_results", {"run_id": run_id, "picture": "yes please"}))
            assert "picture" in text and "boolean" in text

    anyio.run(scenario)
