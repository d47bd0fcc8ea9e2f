#!/usr/bin/env python3
"""Start and stop a SkyRL tx Tinker-API server (API front end + engine) for one test.

Stdlib only, so any interpreter can import it (the test runner's, the system python):

    from launch import start_engine          # with tests/engine on sys.path
    with start_engine(engine_python, model_dir) as eng:
        eng.base_url                         # "http://127.0.0.1:PORT"
        ...
    # both processes are gone here (eng.stop() verifies it)

or from a shell, to keep one running until Ctrl-C (paths default to setup_engine's cache):

    python3 tests/engine/launch.py [--engine-python P --model-dir D] [--port N]

Details that matter:

* The API process (``python -m tx.tinker.api``) spawns its engine with
  ``uv run --extra tinker --extra jax -m tx.tinker.engine ...`` and aborts start-up when
  ``uv`` is missing. A pip-installed venv has no uv project, so a small POSIX-sh stand-in
  named ``uv`` is written into the run's work directory and put first on PATH for the API
  process only. It drops ``run`` and uv's own options, records its PID (which stays the
  engine's PID, as it execs) in ``engine.pid``, and execs the venv's python with the rest.
* ``/api/v1/healthz`` answers as soon as the front end is up, long before the engine has
  loaded the model; no route in tx 0.3.0 reports the engine's state. Readiness is therefore
  a round trip through the engine: a probe session asks for a LoRA adapter of rank
  ``max_lora_rank + 1``; the engine rejects it without allocating a slot, and
  ``/api/v1/retrieve_future`` only answers (HTTP 400) once the engine loop has picked the
  request up. Any terminal answer means the engine serves requests.
* Everything binds 127.0.0.1. ``stop()`` sends SIGTERM to the API (which terminates its
  engine), then ends whichever of the two is still alive by PID and checks both are gone.
"""

from __future__ import annotations

import contextlib
import json
import os
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

HOST = "127.0.0.1"
SAMPLE_BATCH_SEQUENCES = 32  # the tests' and the benchmark's largest batch: 4 groups of 8

# A stand-in for `uv run [uv options] [-m MODULE | python] ARGS...`: exec the venv's python.
UV_STUB = """#!/bin/sh
# uv stand-in written by hermes-rl-mcp tests/engine/launch.py (not the real uv).
[ "$1" = run ] && shift
while [ $# -gt 0 ]; do
  case "$1" in
    -m) break ;;
    --extra|--with|--with-requirements|--group|--only-group|--project|--directory|--python|-p|--package|--index|--index-url|--extra-index-url|--env-file|--no-extra)
      shift 2 ;;
    --) shift; break ;;
    -*) shift ;;
    python|python3) shift; break ;;
    *) break ;;
  esac
done
echo $$ > {pidfile}
exec {python} "$@"
"""


class EngineStartError(RuntimeError):
    pass


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((HOST, 0))
        return s.getsockname()[1]


def _http(method: str, url: str, body: dict | None = None, timeout: float = 5.0) -> tuple[int, dict | str]:
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(url, data=data, method=method, headers={"content-type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=timeout) as resp:
            raw = resp.read().decode()
            status = resp.status
    except urllib.error.HTTPError as exc:
        raw = exc.read().decode(errors="replace")
        status = exc.code
    try:
        return status, json.loads(raw)
    except ValueError:
        return status, raw


def pid_alive(pid: int | None) -> bool:
    """True while `pid` exists and is not a zombie."""
    if not pid:
        return False
    try:
        with open(f"/proc/{pid}/stat") as fh:
            state = fh.read().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state not in ("Z", "X")


def rss_bytes(pid: int | None) -> int | None:
    if not pid:
        return None
    try:
        with open(f"/proc/{pid}/status") as fh:
            for line in fh:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        return None
    return None


def _cmdline(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as fh:
            return fh.read().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


@dataclass
class Engine:
    """A running API + engine pair. Use as a context manager, or call stop()."""

    base_url: str
    port: int
    model_dir: str
    workdir: Path
    api_proc: subprocess.Popen
    engine_pid: int | None
    log_path: Path
    timings: dict = field(default_factory=dict)
    owns_workdir: bool = True
    keep_workdir: bool = False
    stopped: bool = False

    @property
    def api_pid(self) -> int:
        return self.api_proc.pid

    @property
    def db_path(self) -> Path:
        return self.workdir / "tinker.sqlite"

    @property
    def checkpoints_dir(self) -> Path:
        return self.workdir / "checkpoints"

    def rss(self) -> dict:
        return {"api": rss_bytes(self.api_pid), "engine": rss_bytes(self.engine_pid)}

    def alive(self) -> dict:
        return {"api": self.api_proc.poll() is None, "engine": pid_alive(self.engine_pid)}

    def log_tail(self, lines: int = 40) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return ""

    def kill_engine(self, sig: int = signal.SIGKILL) -> None:
        """Kill only the engine process (for failure tests)."""
        if self.engine_pid and pid_alive(self.engine_pid):
            os.kill(self.engine_pid, sig)

    def stop(self, timeout: float = 20.0) -> dict:
        """End the API and the engine, by PID, and verify both are gone. Idempotent."""
        report: dict = {"api_pid": self.api_pid, "engine_pid": self.engine_pid}
        if self.stopped:
            return report
        started = time.monotonic()
        # The engine PID may only be known from the stub's file (if stop() runs early).
        if self.engine_pid is None:
            self.engine_pid = _read_pid(self.workdir / "engine.pid")
            report["engine_pid"] = self.engine_pid
        if self.api_proc.poll() is None:
            self.api_proc.send_signal(signal.SIGTERM)
            try:
                self.api_proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                report["api_killed"] = True
                self.api_proc.kill()
                self.api_proc.wait(timeout=5)
        report["api_exit"] = self.api_proc.returncode
        if self.engine_pid and pid_alive(self.engine_pid) and "tx.tinker.engine" in _cmdline(self.engine_pid):
            report["engine_left_running"] = True
            os.kill(self.engine_pid, signal.SIGTERM)
            if not _wait_gone(self.engine_pid, 5.0):
                os.kill(self.engine_pid, signal.SIGKILL)
                _wait_gone(self.engine_pid, 5.0)
        report["api_gone"] = self.api_proc.poll() is not None
        report["engine_gone"] = not pid_alive(self.engine_pid)
        report["stop_seconds"] = round(time.monotonic() - started, 2)
        self.stopped = True
        if not (report["api_gone"] and report["engine_gone"]):
            raise RuntimeError(f"engine processes still alive after stop: {report}")
        if self.owns_workdir and not self.keep_workdir:
            shutil.rmtree(self.workdir, ignore_errors=True)
        return report

    def __enter__(self) -> "Engine":
        return self

    def __exit__(self, *exc) -> None:
        self.stop()


def _read_pid(path: Path) -> int | None:
    try:
        return int(path.read_text().strip())
    except (OSError, ValueError):
        return None


def _wait_gone(pid: int, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not pid_alive(pid):
            return True
        time.sleep(0.05)
    return not pid_alive(pid)


def write_uv_stub(bin_dir: Path, engine_python: str, pidfile: Path) -> Path:
    bin_dir.mkdir(parents=True, exist_ok=True)
    stub = bin_dir / "uv"
    stub.write_text(UV_STUB.replace("{pidfile}", shlex.quote(str(pidfile))).replace("{python}", shlex.quote(engine_python)))
    stub.chmod(0o755)
    return stub


def _die_with_parent() -> None:  # runs in the child between fork and exec
    import ctypes

    PR_SET_PDEATHSIG = 1
    ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGTERM)


def engine_env(extra: dict | None = None) -> dict:
    env = dict(os.environ)
    env.update(
        {
            "JAX_PLATFORMS": "cpu",
            "HF_HUB_OFFLINE": "1",
            "TRANSFORMERS_OFFLINE": "1",
            "HF_HUB_DISABLE_TELEMETRY": "1",
            "TOKENIZERS_PARALLELISM": "false",
            "TF_CPP_MIN_LOG_LEVEL": "3",
            "COLUMNS": "200",  # the engine logs through rich, which wraps at 80 columns otherwise
        }
    )
    env.pop("TX_DATABASE_URL", None)
    if extra:
        env.update(extra)
    return env


def _probe_engine(base_url: str, model_dir: str, max_lora_rank: int, deadline: float, alive) -> dict:
    """One round trip through the engine loop; returns what the engine answered."""
    status, body = _http("POST", f"{base_url}/api/v1/create_session",
                         {"tags": ["readiness-probe"], "sdk_version": "probe"})
    if status != 200:
        raise EngineStartError(f"create_session answered {status}: {body}")
    session_id = body["session_id"]
    status, body = _http("POST", f"{base_url}/api/v1/create_model", {
        "session_id": session_id, "base_model": model_dir, "lora_config": {"rank": max_lora_rank + 1, "seed": 0}})
    if status != 200:
        raise EngineStartError(f"create_model answered {status}: {body}")
    request_id = body["request_id"]

    # retrieve_future blocks server-side until the engine completes the request (or 300 s).
    # Wait for it in a thread so the processes can be watched meanwhile.
    answer: dict = {}

    def wait() -> None:
        while time.monotonic() < deadline and "status" not in answer:
            try:
                st, b = _http("POST", f"{base_url}/api/v1/retrieve_future", {"request_id": request_id},
                              timeout=max(1.0, deadline - time.monotonic()))
            except (OSError, urllib.error.URLError) as exc:
                answer["error"] = repr(exc)
                return
            if st == 408:  # server-side wait ran out; ask again
                continue
            answer.update(status=st, body=b)

    t = threading.Thread(target=wait, daemon=True)
    t.start()
    while t.is_alive() and time.monotonic() < deadline:
        problem = alive()
        if problem:
            raise EngineStartError(problem)
        t.join(0.1)
    if "status" not in answer:
        raise EngineStartError(f"engine did not answer the readiness probe in time ({answer.get('error', 'timeout')})")
    return answer


def start_engine(
    engine_python: str,
    model_dir: str,
    *,
    port: int | None = None,
    workdir: str | Path | None = None,
    max_lora_adapters: int = 8,
    max_lora_rank: int = 8,
    backend_config: dict | None = None,
    extra_args: list[str] | None = None,
    env: dict | None = None,
    timeout: float = 180.0,
    keep_workdir: bool = False,
    die_with_parent: bool = True,
) -> Engine:
    """Start API + engine on 127.0.0.1 and return once the engine serves requests.

    `backend_config` entries are merged over {"max_lora_adapters", "max_lora_rank",
    "sample_max_num_sequences"}.
    `extra_args` are appended to the API's command line (e.g. ["--session-timeout-sec", "60"]).
    Raises EngineStartError (after cleaning up) when start-up fails or exceeds `timeout`.
    With `die_with_parent` (and only when called from the main thread, since Linux sends the
    signal when the spawning *thread* ends) the API gets SIGTERM if this process dies without
    calling stop(); the API then terminates its engine, so a crashed test leaves nothing behind.
    """
    t0 = time.monotonic()
    deadline = t0 + timeout
    owns = workdir is None
    wd = Path(tempfile.mkdtemp(prefix="tx-engine-")) if owns else Path(workdir)
    wd.mkdir(parents=True, exist_ok=True)
    pidfile = wd / "engine.pid"
    pidfile.unlink(missing_ok=True)
    write_uv_stub(wd / "bin", engine_python, pidfile)
    (wd / "checkpoints").mkdir(exist_ok=True)
    # A sampling batch padded to a fixed number of sequences has one shape, so the engine compiles
    # its sampler once instead of once per count of pending requests (2-6 s each on this CPU).
    config = {"max_lora_adapters": max_lora_adapters, "max_lora_rank": max_lora_rank,
              "sample_max_num_sequences": SAMPLE_BATCH_SEQUENCES, **(backend_config or {})}
    rank_limit = int(config["max_lora_rank"])
    log_path = wd / "engine.log"

    attempts = 3 if port is None else 1
    last_error = ""
    for _attempt in range(attempts):
        p = port or free_port()
        base_url = f"http://{HOST}:{p}"
        cmd = [
            engine_python, "-m", "tx.tinker.api",
            "--base-model", str(model_dir),
            "--host", HOST,
            "--port", str(p),
            "--database-url", f"sqlite:///{wd / 'tinker.sqlite'}",
            "--checkpoints-base", str(wd / "checkpoints"),
            "--external-inference-lora-base", str(wd / "lora_models"),
            "--backend-config", json.dumps(config),
            *(extra_args or []),
        ]
        proc_env = engine_env(env)
        proc_env["PATH"] = f"{wd / 'bin'}{os.pathsep}{proc_env.get('PATH', '')}"
        logfh = open(log_path, "ab")
        use_pdeathsig = die_with_parent and threading.current_thread() is threading.main_thread()
        api = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=logfh, stderr=subprocess.STDOUT,
                               env=proc_env, cwd=wd, start_new_session=True,
                               preexec_fn=_die_with_parent if use_pdeathsig else None)
        logfh.close()
        eng = Engine(base_url=base_url, port=p, model_dir=str(model_dir), workdir=wd, api_proc=api,
                     engine_pid=None, log_path=log_path, owns_workdir=owns, keep_workdir=keep_workdir)

        def problem() -> str | None:
            if api.poll() is not None:
                return f"API process exited with {api.returncode}:\n{eng.log_tail()}"
            if eng.engine_pid is None:
                eng.engine_pid = _read_pid(pidfile)
            if eng.engine_pid is not None and not pid_alive(eng.engine_pid):
                return f"engine process {eng.engine_pid} died:\n{eng.log_tail()}"
            return None

        try:
            # 1. the front end
            while True:
                if (msg := problem()):
                    raise EngineStartError(msg)
                if time.monotonic() > deadline:
                    raise EngineStartError(f"API not healthy within {timeout} s:\n{eng.log_tail()}")
                with contextlib.suppress(OSError, urllib.error.URLError):
                    status, _ = _http("GET", f"{base_url}/api/v1/healthz", timeout=1.0)
                    if status == 200:
                        break
                time.sleep(0.05)
            eng.timings["api_healthy_s"] = round(time.monotonic() - t0, 2)
            # 2. the engine behind it
            answer = _probe_engine(base_url, str(model_dir), rank_limit, deadline, problem)
            eng.timings["engine_ready_s"] = round(time.monotonic() - t0, 2)
            eng.timings["probe_answer"] = answer
            if eng.engine_pid is None:
                eng.engine_pid = _read_pid(pidfile)
            return eng
        except EngineStartError as exc:
            last_error = str(exc)
            port_clash = "address already in use" in eng.log_tail().lower()
            with contextlib.suppress(Exception):
                eng.keep_workdir = True
                eng.stop(timeout=10)
            if not (port_clash and port is None):
                break
        except BaseException:
            with contextlib.suppress(Exception):
                eng.stop(timeout=10)
            raise
    if owns and not keep_workdir:
        shutil.rmtree(wd, ignore_errors=True)
    raise EngineStartError(last_error)


def main(argv: list[str] | None = None) -> int:
    import argparse

    parser = argparse.ArgumentParser(description="Run a SkyRL tx engine on 127.0.0.1 until interrupted.")
    parser.add_argument("--engine-python")
    parser.add_argument("--model-dir")
    parser.add_argument("--port", type=int)
    parser.add_argument("--workdir")
    parser.add_argument("--timeout", type=float, default=180.0)
    parser.add_argument("--once", action="store_true", help="start, print, stop (a start-up check)")
    args = parser.parse_args(argv)
    if not (args.engine_python and args.model_dir):
        sys.path.insert(0, str(Path(__file__).resolve().parent))
        import setup_engine

        paths = setup_engine.ensure()
        args.engine_python = args.engine_python or paths["engine_python"]
        args.model_dir = args.model_dir or paths["model_dir"]
    eng = start_engine(args.engine_python, args.model_dir, port=args.port, workdir=args.workdir, timeout=args.timeout)
    info = {"base_url": eng.base_url, "api_pid": eng.api_pid, "engine_pid": eng.engine_pid,
            "model_dir": eng.model_dir, "workdir": str(eng.workdir), "log": str(eng.log_path),
            "timings": {k: v for k, v in eng.timings.items() if k != "probe_answer"}, "rss": eng.rss()}
    print(json.dumps(info), flush=True)
    if args.once:
        print(json.dumps(eng.stop()), flush=True)
        return 0
    stop = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: stop.set())
    try:
        while not stop.is_set() and all(eng.alive().values()):
            stop.wait(0.5)
    finally:
        print(json.dumps(eng.stop()), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
