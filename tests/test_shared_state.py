"""Several server processes on one state directory: every acknowledged edit is kept."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

from hermes_rl_mcp.core.control import ControlPlane

EDITOR = """
import json, sys, time
from hermes_rl_mcp.core.control import ControlPlane
fields, start = json.loads(sys.argv[1]), float(sys.argv[2])
control = ControlPlane()
while time.time() < start:
    time.sleep(0.001)
done = {}
for field, value in fields.items():
    done[field] = control.edit_config(field, value).new_value
print(json.dumps(done))
"""


def test_concurrent_edits_from_two_processes_are_all_kept(isolated_state: Path) -> None:
    ControlPlane().select_environment("reverse_text")
    first = {f"env.{name}": 3 + i for i, name in enumerate(
        ["group_size", "max_eval_workers", "steps_per_eval", "total_steps", "eval_size", "worker_timeout",
         "num_rollouts_to_keep", "min_items_sent_before_logging"])}
    second = {f"trainer.{name}": value for name, value in [
        ("batch_size", 16), ("hidden_size", 32), ("checkpoint_interval", 7), ("seed", 5), ("kl_coef", 0.5),
        ("entropy_coef", 0.25), ("clip_epsilon", 0.3), ("temperature", 0.7)]}
    start = time.time() + 2.0  # both processes start editing at the same moment
    editors = [
        subprocess.Popen([sys.executable, "-c", EDITOR, json.dumps(fields), str(start)], stdout=subprocess.PIPE, text=True)
        for fields in (first, second)
    ]
    acknowledged = {}
    for editor in editors:
        out, _ = editor.communicate(timeout=60)
        assert editor.returncode == 0
        acknowledged.update(json.loads(out))
    assert len(acknowledged) == 16
    current = ControlPlane().current_config().editable
    lost = {name: value for name, value in acknowledged.items() if current[name].value != value}
    assert not lost, f"acknowledged edits were lost: {lost}"
