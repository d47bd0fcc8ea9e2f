"""Real tiny component processes and a backend that runs them, for the run-control tests.

Not a test module by itself. ``ProcBackend`` is loaded by the supervisor through
``HERMES_RL_BACKENDS`` (an operator plug-in, as a real alternative backend would be), and the
components are separate Python processes serving HTTP /health on the ports the supervisor
assigned, writing metrics and checkpoints like the real ones, spawning grandchildren when asked,
and exiting or failing as the run config's ``test`` section says.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

SCRIPT = Path(__file__).resolve()


class ProcBackend:
    name = "procs"

    def check(self, config: dict[str, Any], environ: Any) -> None:
        return None

    def components(self, config: dict[str, Any], config_path: Path, ports: Any) -> list[Any]:
        from hermes_rl_mcp.runs.backends import ComponentSpec

        def argv(role: str) -> list[str]:
            return [sys.executable, str(SCRIPT), role, str(config_path)]

        return [
            ComponentSpec("api", argv("api"), "api", f"http://127.0.0.1:{ports.api}/health", ready_timeout=20),
            ComponentSpec("trainer", argv("trainer"), "policy", f"http://127.0.0.1:{ports.policy}/health", ready_timeout=20),
            ComponentSpec(
                "env",
                argv("env"),
                ready_url=f"http://127.0.0.1:{ports.api}/status-env?env_id=0",
                ready_timeout=20,
            ),
        ]

    def secret_keys(self) -> tuple[str, ...]:
        return ("WANDB_API_KEY",)


def _append(path: Path, record: dict[str, Any]) -> None:
    with open(path, "a", encoding="utf-8") as handle:
        handle.write(json.dumps(record) + "\n")


def _serve(port: int, ready_after: float) -> None:
    """/health (200 after ``ready_after`` s); like the trajectory API, /register-env makes
    /status-env?env_id=0 answer 200."""
    born = time.monotonic()
    registered = threading.Event()

    class Health(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 - http.server's naming
            if self.path == "/status-env?env_id=0":
                ok = registered.is_set()
            else:
                ok = self.path == "/health" and time.monotonic() - born >= ready_after
            self.send_response(200 if ok else 404)
            self.end_headers()
            self.wfile.write(b'{"status": "ok"}' if ok else b"{}")

        def do_POST(self) -> None:  # noqa: N802
            self.rfile.read(int(self.headers.get("Content-Length") or 0))
            if self.path == "/register-env":
                registered.set()
            self.send_response(200)
            self.end_headers()
            self.wfile.write(b'{"status": "success", "env_id": 0}')

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", port), Health)
    threading.Thread(target=server.serve_forever, daemon=True).start()


def _register(api_url: str) -> None:
    import http.client

    host, port = api_url.split("://", 1)[1].split(":")
    connection = http.client.HTTPConnection(host, int(port), timeout=2)
    connection.request("POST", "/register-env", body=b'{"group_size": 4}', headers={"Content-Type": "application/json"})
    connection.getresponse().read()
    connection.close()


def _wait_until_down(port: int, timeout: float = 30.0) -> None:
    """Until nothing accepts connections on ``port`` (the process that served it has ended)."""
    import socket

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
        except OSError:
            return
        time.sleep(0.02)


def _spawn_grandchildren(run_dir: Path, role: str) -> None:
    sleeper = [sys.executable, "-c", "import time; time.sleep(600)"]
    in_group = subprocess.Popen(sleeper)
    own_session = subprocess.Popen(sleeper, start_new_session=True)  # leaves the process group
    pids = run_dir / "pids"
    pids.mkdir(exist_ok=True)
    (pids / role).write_text(f"{os.getpid()} {in_group.pid} {own_session.pid}\n")


def main(role: str, config_path: str) -> int:
    import yaml

    from hermes_rl_mcp.runs.lifeline import watch_supervisor
    from hermes_rl_mcp.start_gate import wait_for_predecessor

    watch_supervisor()  # as every real component does: end with the supervisor
    wait_for_predecessor()  # as every real component does: start once the one before answers
    config = yaml.safe_load(Path(config_path).read_text())
    test = config.get("test") or {}
    run_dir = Path(config["run"]["dir"])
    total = int(config.get("env", {}).get("total_steps", 10))
    print(f"{role} started, pid {os.getpid()}", flush=True)
    print(f"{role} environment: {' '.join(sorted(os.environ))}", flush=True)
    if role == "api" and test.get("collide_once"):
        marker = run_dir / "collided"
        if not marker.exists():
            marker.write_text("1")
            print("OSError: [Errno 98] error while attempting to bind: address already in use", flush=True)
            return 1
    if role == "api":
        _serve(int(config["run"]["api_url"].rsplit(":", 1)[1]), float(test.get("ready_after", 0)))
    if role == "trainer":
        _serve(int(config["trainer"]["port"]), float(test.get("ready_after", 0)))
    if test.get("grandchildren"):
        _spawn_grandchildren(run_dir, role)
    if role == "env":
        _register(config["run"]["api_url"])
    fail_at = test.get("fail_after") if test.get("fail_component") == role else None
    step_time = float(test.get("step_time", 0.02))
    finite = bool(test.get("finish")) and role in ("trainer", "env")
    born = time.monotonic()
    step = 0
    wrote_final = False
    while True:
        if fail_at is not None and time.monotonic() - born >= float(fail_at):
            print(f"{role}: failing on purpose with code {test.get('fail_code', 3)}", flush=True)
            return int(test.get("fail_code", 3))
        if finite and step >= total and not wrote_final:
            if role == "trainer":
                path = run_dir / "checkpoints" / f"step_{step}.npz"
                path.write_bytes(b"checkpoint")
                _append(run_dir / "checkpoints.jsonl", {"step": step, "path": str(path), "kind": "final", "time": time.time()})
            if role == "env" and not test.get("serve_after_final"):
                # The trainer ends by itself here; the environment ends after it, so that which of
                # the two the supervisor sees end first is never a race of a few milliseconds.
                _wait_until_down(int(config["trainer"]["port"]))
            print(f"{role} finished {step} steps", flush=True)
            wrote_final = True
            if not (role == "trainer" and test.get("serve_after_final")):
                return 0
        if role in ("trainer", "env") and step < total:
            step += 1
            if role == "trainer":
                _append(run_dir / "metrics.jsonl", {"step": step, "time": time.time(), "train/loss": 1.0 / step, "reward/mean": step / total})
                if step % 5 == 0:
                    path = run_dir / "checkpoints" / f"step_{step}.npz"
                    path.write_bytes(b"checkpoint")
                    _append(run_dir / "checkpoints.jsonl", {"step": step, "path": str(path), "kind": "periodic", "time": time.time()})
            else:
                _append(run_dir / "metrics.jsonl", {"step": step, "time": time.time(), "train/percent_correct": step / total})
                if step % 4 == 0:
                    _append(run_dir / "metrics.jsonl", {"step": step, "time": time.time(), "eval/percent_correct": step / (2 * total)})
        time.sleep(step_time)


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1], sys.argv[2]))
