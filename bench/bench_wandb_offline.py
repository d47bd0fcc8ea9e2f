"""W&B without a network: a short real local run's wall time with W&B off, offline, and online
with a valid-shaped key against a W&B server that never answers (or refuses).

    python bench/bench_wandb_offline.py [--steps 20] [--network silent|refusing]

Everything runs in a temporary state directory; the "W&B server" is a loopback socket.
The figure to compare: a key and no network must cost about what offline W&B costs.
"""

from __future__ import annotations

import argparse
import os
import socket
import sys
import tempfile
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
KEY = "0123456789abcdef0123456789abcdef01234567"


def silent_port() -> tuple[int, socket.socket]:
    server = socket.create_server(("127.0.0.1", 0))
    held: list[socket.socket] = []
    threading.Thread(target=lambda: [held.append(server.accept()[0]) for _ in iter(int, 1)], daemon=True).start()
    return server.getsockname()[1], server


def refusing_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def one_run(state: Path, steps: int, use_wandb: bool) -> tuple[float, float, list[str]]:
    from hermes_rl_mcp.runs import check_status, start_run

    config = {
        "run": {"environment": "reverse_text", "backend": "local", "env_file": str(REPO / "environments" / "reverse_text.py")},
        "env": {"total_steps": steps, "steps_per_eval": 10_000, "group_size": 4, "eval_size": 8, "use_wandb": use_wandb},
        "trainer": {"batch_size": 16, "checkpoint_interval": 10_000},
        "openai": [{"model_name": "hermes-rl-local"}],
    }
    run_id = start_run(config, state=state).run_id
    while (status := check_status(run_id, state=state)).status not in ("completed", "failed", "stopped"):
        time.sleep(0.1)
    if status.status != "completed":
        print(f"  run ended {status.status}: {status.reason}", file=sys.stderr)
    return status.ended_at - status.created_at, status.ended_at - (status.started_at or status.created_at), status.notes


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--network", choices=("silent", "refusing"), default="silent")
    args = parser.parse_args()
    for name in ("WANDB_API_KEY", "WANDB_BASE_URL"):
        os.environ.pop(name, None)
    with tempfile.TemporaryDirectory() as tmp:
        state = Path(tmp)
        os.environ["HERMES_RL_HOME"] = str(state)
        rows = [("W&B off", *one_run(state, args.steps, False)), ("W&B offline (no key)", *one_run(state, args.steps, True))]
        held = None
        if args.network == "silent":
            port, held = silent_port()
        else:
            port = refusing_port()
        os.environ["WANDB_API_KEY"] = KEY
        os.environ["WANDB_BASE_URL"] = f"http://127.0.0.1:{port}"
        rows.append((f"key, server {args.network}", *one_run(state, args.steps, True)))
        if held is not None:
            held.close()
    print(f"{args.steps}-step local run (reverse_text), seconds:")
    print(f"  {'case':28} {'created->ended':>15} {'running->ended':>15}  notes")
    for case, total, running, notes in rows:
        print(f"  {case:28} {total:15.1f} {running:15.1f}  {len(notes)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
