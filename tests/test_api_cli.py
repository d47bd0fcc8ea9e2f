"""``hermes-rl-mcp api`` as a real process on loopback: startup line, HTTP traffic, shutdown."""

from __future__ import annotations

import gzip
import json
import re
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from hermes_rl_mcp.api.cli import main


def _start(*args: str) -> tuple[subprocess.Popen[str], str, list[str]]:
    process = subprocess.Popen(
        [sys.executable, "-m", "hermes_rl_mcp", "api", *args],
        stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True,
    )
    assert process.stderr is not None
    lines: list[str] = []
    found = threading.Event()
    url: list[str] = []

    def read() -> None:
        for line in process.stderr:  # type: ignore[union-attr]
            lines.append(line)
            match = re.search(r"trajectory API listening on (http://127\.0\.0\.1:\d+)", line)
            if match and not url:
                url.append(match.group(1))
                found.set()

    threading.Thread(target=read, daemon=True).start()
    if not found.wait(20):
        process.kill()
        pytest.fail(f"no listening line; stderr: {''.join(lines)}")
    return process, url[0], lines


@pytest.fixture()
def server() -> Iterator[tuple[subprocess.Popen[str], str, list[str]]]:
    process, url, lines = _start("--port", "0")
    try:
        yield process, url, lines
    finally:
        if process.poll() is None:
            process.kill()
            process.wait(5)


def _wait_healthy(url: str) -> None:
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        try:
            if httpx.get(f"{url}/health", timeout=1).status_code == 200:
                return
        except httpx.TransportError:
            time.sleep(0.05)
    pytest.fail("server never became healthy")


def test_trainer_and_environment_talk_over_real_http_and_sigterm_exits_cleanly(server) -> None:  # type: ignore[no-untyped-def]
    process, url, lines = server
    _wait_healthy(url)
    with httpx.Client(base_url=url, timeout=10) as http:
        assert http.post("/register", json={"batch_size": 4, "max_token_len": 16, "num_steps": 3, "checkpoint_dir": "",
                                            "save_checkpoint_interval": -1, "starting_step": 0,
                                            "wandb_group": "g", "wandb_project": "p"}).status_code == 200
        env = http.post("/register-env", json={"max_token_length": 16, "desired_name": "rev", "weight": 1.0,
                                               "group_size": 2}).json()
        assert env["status"] == "success"
        group = {"tokens": [[1, 2, 3], [1, 2, 4]], "masks": [[-100, 2, 3], [-100, 2, 4]], "scores": [1.0, 0.0],
                 "inference_logprobs": [[1.0, -0.5, -0.25], [1.0, -0.5, -1.5]], "env_id": env["env_id"]}
        assert http.post("/scored_data", json=group).json() == {"status": "received"}
        # The way Atropos environments post: gzip-compressed JSON.
        zipped = gzip.compress(json.dumps(group).encode())
        reply = http.post("/scored_data", content=zipped, headers={"Content-Encoding": "gzip", "Content-Type": "application/json"})
        assert reply.json() == {"status": "received"}
        # Atropos sends env_id as a JSON body on a GET.
        status = http.request("GET", "/status-env", content=json.dumps({"env_id": env["env_id"]})).json()
        assert status["self_queue_size"] == 2
        bad = http.post("/scored_data", content=b'{"tokens": [[1, "x"]]')
        assert bad.status_code == 400
        batch = http.get("/batch").json()["batch"]
        assert [g["tokens"] for g in batch] == [group["tokens"], group["tokens"]]
        assert http.get("/status").json() == {"current_step": 1, "queue_size": 0}

    process.send_signal(signal.SIGTERM)
    assert process.wait(10) == 0
    log = "".join(lines)
    assert "trainer registered" in log and "delivered 4 sequences" in log and "-> 400" in log
    assert "Traceback" not in log


def test_sigint_also_exits_cleanly(server) -> None:  # type: ignore[no-untyped-def]
    process, url, lines = server
    _wait_healthy(url)
    process.send_signal(signal.SIGINT)
    assert process.wait(10) == 0
    assert "Traceback" not in "".join(lines)


def test_refuses_non_loopback_addresses_without_allow_remote(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--host", "0.0.0.0", "--port", "0"]) == 2
    assert "--allow-remote" in capsys.readouterr().err


def test_port_comes_from_the_run_config(tmp_path: Path) -> None:
    with socket.socket() as sock:  # a free port, found the way the supervisor finds one
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    config = tmp_path / "run.yaml"
    config.write_text(f"run:\n  api_url: http://127.0.0.1:{port}\n")
    process, url, _ = _start("--config", str(config))
    try:
        assert url == f"http://127.0.0.1:{port}"
        _wait_healthy(url)
        assert httpx.get(f"{url}/info").json() == {"batch_size": -1, "max_token_len": -1}
    finally:
        process.terminate()
        assert process.wait(10) == 0


def test_help_explains_remote_binding(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["--help"])
    assert exit_info.value.code == 0
    out = capsys.readouterr().out
    assert "--allow-remote" in out and "no authentication" in out
