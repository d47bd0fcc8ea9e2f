"""The W&B mirror of metrics.jsonl, in a real process with real (offline) W&B."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

# A component that logs, waits for W&B's helper process (wandb-core) to start, optionally
# kills it, and exits without closing its metrics log, as one does when a second signal cuts
# its stop short.
COMPONENT = textwrap.dedent(
    """
    import os, signal, sys, time
    from pathlib import Path
    from hermes_rl_mcp.metrics_log import MetricsLog

    run_dir, kill_helper = Path(sys.argv[1]), sys.argv[2] == "kill"
    metrics = MetricsLog(run_dir / "metrics.jsonl", use_wandb=True, wandb_name="mirror-test", component="env")

    def helpers():
        found = []
        for entry in Path("/proc").iterdir():
            try:
                if entry.name.isdigit() and int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1]) == os.getpid():
                    if b"wandb-core" in (entry / "cmdline").read_bytes():
                        found.append(int(entry.name))
            except (OSError, ValueError):
                pass
        return found

    deadline = time.monotonic() + 60
    step = 0
    while not helpers() or not (run_dir / "wandb").is_dir():
        assert time.monotonic() < deadline, "W&B's helper never started"
        metrics.log(step, {"train/loss": 1.0 / (step + 1)})
        step += 1
        time.sleep(0.1)
    time.sleep(1.0)  # let the mirror's wandb.init return
    if kill_helper:
        for pid in helpers():
            os.kill(pid, signal.SIGKILL)
        time.sleep(0.5)
    print("exiting without close", flush=True)
    """
)


@pytest.mark.parametrize("helper", ["alive", "kill"])
def test_a_component_that_exits_without_closing_w_and_b_ends_it_without_a_traceback(helper: str, tmp_path: Path) -> None:
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "WANDB_MODE": "offline"}
    done = subprocess.run(
        [sys.executable, "-c", COMPONENT, str(tmp_path), helper],
        env=env, capture_output=True, text=True, timeout=120,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert "exiting without close" in done.stdout
    assert "Traceback" not in done.stderr, done.stderr[-3000:]
    if helper == "kill":
        assert "metrics.jsonl holds every record" in done.stderr, done.stderr[-3000:]
    else:
        assert done.stderr.strip() == "", done.stderr[-3000:]
        assert list((tmp_path / "wandb").rglob("*.wandb")), "the offline W&B run was not written"
