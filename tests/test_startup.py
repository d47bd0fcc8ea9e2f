"""Serving MCP must not pay for W&B, NumPy, the trainer or the trajectory API."""

from __future__ import annotations

import json
import subprocess
import sys

HEAVY = ["wandb", "numpy", "matplotlib", "hermes_rl_mcp.trainer.model", "hermes_rl_mcp.api.app"]


def test_server_start_up_imports_nothing_heavy() -> None:
    probe = (
        "import json, sys\n"
        "from hermes_rl_mcp.server import build_server\n"
        "build_server()\n"
        f"print(json.dumps([m for m in {HEAVY!r} if m in sys.modules]))\n"
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60, check=True)
    assert json.loads(out.stdout.strip().splitlines()[-1]) == []
