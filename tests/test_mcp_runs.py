"""Runs driven through the MCP server with real clients: real supervisors, real components."""

from __future__ import annotations

import os
import signal
import sys
import time
import uuid
from pathlib import Path

import anyio
import pytest
from mcp.client import Client
from mcp.client.stdio import StdioServerParameters

from hermes_rl_mcp.runs.procs import descendants
from mcp_helpers import ERA_VERSION, ERAS, refusal_text, in_memory, structured

SHORT_RUN = {"env.total_steps": 12, "env.steps_per_eval": 6, "env.use_wandb": False}


async def start_short_run(client: Client, environment: str = "reverse_text") -> dict:
    structured(await client.call_tool("rl_select_environment", {"name": environment}))
    for field, value in SHORT_RUN.items():
        structured(await client.call_tool("rl_edit_config", {"field": field, "value": value}))
    started = structured(await client.call_tool("rl_start_training", {}))
    assert started["status"] == "starting"
    return started


async def wait_for_status(client: Client, run_id: str, wanted: set[str], timeout: float) -> dict:
    deadline = time.monotonic() + timeout
    while True:
        status = structured(await client.call_tool("rl_check_status", {"run_id": run_id}))
        if status["status"] in wanted:
            return status
        assert time.monotonic() < deadline, f"run stayed {status['status']}: {status.get('reason')}"
        await anyio.sleep(0.25)


def alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as handle:
            return handle.read().rsplit(")", 1)[1].split()[0] != "Z"
    except (FileNotFoundError, ProcessLookupError):
        return False


def server_params(marker: str) -> StdioServerParameters:
    env = {"HERMES_RL_HOME": os.environ["HERMES_RL_HOME"], "HERMES_RL_TEST_MARKER": marker}
    return StdioServerParameters(command=sys.executable, args=["-m", "hermes_rl_mcp"], env=env)


def pid_with_marker(marker: str) -> int:
    needle = f"HERMES_RL_TEST_MARKER={marker}".encode()
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if needle in (entry / "environ").read_bytes().split(b"\0"):
                    return int(entry.name)
            except OSError:
                continue
    raise AssertionError("server process not found")


@pytest.mark.parametrize("era", ERAS)
def test_whole_workflow_over_stdio(era: str) -> None:
    async def scenario() -> None:
        async with Client(server_params(uuid.uuid4().hex), mode=era) as client:
            assert client.protocol_version == ERA_VERSION[era]
            started = await start_short_run(client)
            run_id = started["run_id"]
            assert Path(started["config_path"]).is_file()
            assert started["log_uris"]["trainer"] == f"rl://runs/{run_id}/logs/trainer"

            final = await wait_for_status(client, run_id, {"completed", "failed"}, timeout=150)
            assert final["status"] == "completed", final
            assert final["step"] == final["total_steps"] == 12
            assert all(c["state"] in ("exited", "stopped") for c in final["components"].values())

            results = structured(await client.call_tool("rl_get_results", {"run_id": run_id}))
            assert results["final_checkpoint"] and Path(results["final_checkpoint"]).exists()
            assert any(c["kind"] == "final" for c in results["checkpoints"])
            assert "train/loss" in results["history"] and len(results["history"]["train/loss"]["steps"]) <= 40
            assert "eval/percent_correct" in results["final_metrics"]
            assert results["config"]["env"]["total_steps"] == 12

            logs = structured(await client.call_tool("rl_get_logs", {"run_id": run_id, "component": "trainer", "lines": 50}))
            assert logs["text"] and logs["lines"] <= 50
            resource = await client.read_resource(f"rl://runs/{run_id}/logs/trainer")
            assert resource.contents[0].text.endswith(logs["text"].splitlines()[-1])
            for escape in ("..%2F..%2F..%2F..%2Fetc%2Fpasswd", "..", "config.yaml"):
                with pytest.raises(Exception, match="Unknown resource|unknown component"):
                    await client.read_resource(f"rl://runs/{run_id}/logs/{escape}")
            listed = {r.uri for r in (await client.list_resources()).resources}
            assert f"rl://runs/{run_id}/logs/env" in listed and f"rl://runs/{run_id}/metrics" in listed
            templates = {t.uri_template for t in (await client.list_resource_templates()).resource_templates}
            assert "rl://runs/{run_id}/logs/{component}" in templates

            runs = structured(await client.call_tool("rl_list_runs", {"status": "completed"}))
            assert [r["run_id"] for r in runs["runs"]] == [run_id]
            # stopping a finished run changes nothing
            stopped = structured(await client.call_tool("rl_stop_training", {"run_id": run_id}))
            assert stopped["status"] == "completed" and stopped["changed"] is False

    anyio.run(scenario)


def test_run_survives_a_sigkilled_server_and_a_new_server_stops_it() -> None:
    async def scenario() -> dict:
        marker = uuid.uuid4().hex
        try:
            async with Client(server_params(marker), mode="legacy") as client:
                started = await start_short_run(client)
                await wait_for_status(client, started["run_id"], {"running"}, timeout=60)
                os.kill(pid_with_marker(marker), signal.SIGKILL)
                await anyio.sleep(0.5)
        except Exception:  # noqa: BLE001 - the client notices its server died; that is the point
            pass
        async with Client(server_params(uuid.uuid4().hex), mode="legacy") as client:
            status = structured(await client.call_tool("rl_check_status", {"run_id": started["run_id"]}))
            assert status["status"] == "running", status
            pids = [c["pid"] for c in status["components"].values() if c["pid"]] + [status["supervisor_pid"]]
            assert all(alive(pid) for pid in pids)
            began = time.monotonic()
            stopped = structured(await client.call_tool("rl_stop_training", {"run_id": started["run_id"]}))
            assert time.monotonic() - began < 5.0
            assert stopped["status"] == "stopped" and stopped["changed"] and stopped["leftover_pids"] == []
            again = structured(await client.call_tool("rl_stop_training", {"run_id": started["run_id"]}))
            assert again["status"] == "stopped" and again["changed"] is False
            results = structured(await client.call_tool("rl_get_results", {"run_id": started["run_id"]}))
            assert results["status"] == "stopped"
        return {"pids": pids}

    pids = anyio.run(scenario)["pids"]
    deadline = time.monotonic() + 2
    while any(alive(pid) for pid in pids) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not [pid for pid in pids if alive(pid)], "a process of the stopped run is still alive"


@pytest.mark.parametrize("era", ERAS)
def test_log_subscribers_are_notified_as_the_log_grows(era: str) -> None:
    async def scenario() -> None:
        updates: list[str] = []

        async def on_message(message) -> None:
            params = getattr(getattr(message, "root", message), "params", None)
            uri = getattr(params, "uri", None)
            if uri:
                updates.append(str(uri))

        async with Client(server_params(uuid.uuid4().hex), mode=era, message_handler=on_message) as client:
            started = await start_short_run(client)
            uri = started["log_uris"]["supervisor"]
            try:
                with anyio.fail_after(30):
                    if era == "legacy":
                        await client.subscribe_resource(uri)
                        while uri not in updates:
                            await anyio.sleep(0.1)
                    else:
                        async with client.listen(resource_subscriptions=[uri]) as subscription:
                            async for event in subscription:
                                assert event.uri == uri
                                break
            finally:
                structured(await client.call_tool("rl_stop_training", {"run_id": started["run_id"]}))

    anyio.run(scenario)


@pytest.mark.parametrize("era", ERAS)
def test_bad_run_ids_components_and_uris_are_clear_errors(era: str) -> None:
    async def scenario() -> None:
        async with in_memory(era) as client:
            unknown = "r-20260101-0000-abcdef"
            for tool in ("rl_check_status", "rl_stop_training", "rl_get_results"):
                assert "no run with id" in refusal_text(await client.call_tool(tool, {"run_id": unknown}))
                for bad in ("../../etc/passwd", "", "r-1; rm -rf /", "x" * 90):
                    text = refusal_text(await client.call_tool(tool, {"run_id": bad}))
                    assert "run id" in text.lower(), text
            assert refusal_text(await client.call_tool("rl_get_logs", {"run_id": unknown, "component": "passwd"}))
            assert refusal_text(await client.call_tool("rl_get_logs", {"run_id": unknown, "component": "env", "lines": 10**9}))
            assert refusal_text(await client.call_tool("rl_list_runs", {"status": "exploded"}))
            assert structured(await client.call_tool("rl_list_runs", {}))["count"] == 0
            assert "no environment is selected" in refusal_text(await client.call_tool("rl_start_training", {}))
            for uri in (
                "rl://runs/../../etc/passwd/logs/api",
                "rl://runs/%2e%2e%2f%2e%2e/logs/api",
                f"rl://runs/{unknown}/logs/api",
                f"rl://runs/{unknown}/logs/../../../../etc/passwd",
                f"rl://runs/{unknown}/config",
                "rl://runs/r-20260101-0000-abcdef/metrics/../../../secrets",
            ):
                with pytest.raises(Exception) as caught:
                    await client.read_resource(uri)
                assert "Unknown resource" in str(caught.value) or "no run with id" in str(caught.value)

    anyio.run(scenario)


async def start_run_with_wandb(client: Client) -> str:
    """Start a reverse_text run with its offline W&B mirror on; returns its run id."""
    structured(await client.call_tool("rl_select_environment", {"name": "reverse_text"}))
    structured(await client.call_tool("rl_edit_config", {"field": "env.use_wandb", "value": True}))
    return structured(await client.call_tool("rl_start_training", {}))["run_id"]


async def stop_and_read_logs(client: Client, run_id: str) -> dict[str, str]:
    """Stop the run (every process ended) and return its trainer and env logs, checked to hold no traceback."""
    stopped = structured(await client.call_tool("rl_stop_training", {"run_id": run_id}))
    assert stopped["status"] == "stopped" and stopped["leftover_pids"] == []
    logs = {
        component: structured(await client.call_tool(
            "rl_get_logs", {"run_id": run_id, "component": component, "lines": 400}
        ))["text"]
        for component in ("trainer", "env")
    }
    for component, text in logs.items():
        assert "Traceback" not in text, f"{component}.log:\n{text[-2000:]}"
    return logs


def test_a_stopped_run_with_wandb_ends_its_logs_with_the_stop() -> None:
    """Each component finishes its offline W&B run before its helper processes are ended."""

    async def scenario() -> None:
        async with in_memory("legacy") as client:
            run_id = await start_run_with_wandb(client)
            deadline = time.monotonic() + 60
            while (status := structured(await client.call_tool("rl_check_status", {"run_id": run_id})))["step"] < 3:
                assert status["status"] in ("starting", "running") and time.monotonic() < deadline, status
                await anyio.sleep(0.2)
            logs = await stop_and_read_logs(client, run_id)
            assert "stopped by signal at step" in logs["trainer"].splitlines()[-1], logs["trainer"][-500:]
            assert "stopped by signal" in logs["env"].splitlines()[-1], logs["env"][-500:]

    anyio.run(scenario)


def wandb_helpers_of(status: dict) -> dict[str, int]:
    """The pid of each component's W&B helper process (wandb-core), by the component it serves."""
    helpers = {}
    for name, component in status["components"].items():
        for child in descendants(component["pid"]) if component.get("pid") else ():
            try:
                if b"wandb-core" in Path(f"/proc/{child.pid}/cmdline").read_bytes():
                    helpers[name] = child.pid
            except OSError:
                continue
    return helpers


def wandb_run_file_of(helper_pid: int) -> Path | None:
    """The offline run file (``run-*.wandb``) a W&B helper process has open, once it has one."""
    try:
        for fd in Path(f"/proc/{helper_pid}/fd").iterdir():
            target = os.readlink(fd)
            if target.endswith(".wandb"):
                return Path(target)
    except OSError:
        pass
    return None


def test_a_w_and_b_helper_killed_under_a_component_leaves_a_note_not_a_traceback() -> None:
    """W&B's helper can die first (killed, or ended with its component's process tree when the
    component overruns its stop grace): the log then says so in one line and still ends with the stop."""

    async def scenario() -> None:
        async with in_memory("legacy") as client:
            run_id = await start_run_with_wandb(client)
            deadline = time.monotonic() + 90
            sizes: list[int] = []  # of the env's W&B run file, while it waits to see records arrive
            while len(sizes) < 2 or sizes[-1] == sizes[0]:
                status = structured(await client.call_tool("rl_check_status", {"run_id": run_id}))
                assert status["status"] in ("starting", "running") and time.monotonic() < deadline, status
                helpers = wandb_helpers_of(status)
                written = wandb_run_file_of(helpers["env"]) if len(helpers) == 2 else None
                if written is not None:
                    sizes.append(written.stat().st_size)
                await anyio.sleep(0.2)
            # Its W&B run is started and logging: the helper dies under a running mirror, not
            # during W&B's start-up (that is the "mirror disabled" note, a different path).
            os.kill(helpers["env"], signal.SIGKILL)
            logs = await stop_and_read_logs(client, run_id)
            assert "metrics.jsonl holds every record" in logs["env"], logs["env"][-1000:]
            assert "stopped by signal" in logs["env"].splitlines()[-1], logs["env"][-500:]
            assert "W&B" not in logs["trainer"], logs["trainer"][-1000:]  # its own helper was untouched
            assert "stopped by signal at step" in logs["trainer"].splitlines()[-1], logs["trainer"][-500:]

    anyio.run(scenario)


@pytest.mark.parametrize("era", ERAS)
def test_status_names_a_frozen_trainer_and_a_stop_still_ends_it(era: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HERMES_RL_STALL_AFTER_S", "2")
    monkeypatch.setenv("HERMES_RL_STALL_FAIL_S", "120")

    async def scenario() -> None:
        async with in_memory(era) as client:
            structured(await client.call_tool("rl_select_environment", {"name": "reverse_text"}))
            for field, value in {"env.total_steps": 100_000, "env.steps_per_eval": 10_000, "env.use_wandb": False}.items():
                structured(await client.call_tool("rl_edit_config", {"field": field, "value": value}))
            run_id = structured(await client.call_tool("rl_start_training", {}))["run_id"]
            deadline = time.monotonic() + 90
            while (status := structured(await client.call_tool("rl_check_status", {"run_id": run_id})))["step"] < 2:
                assert status["status"] in ("starting", "running") and time.monotonic() < deadline, status
                await anyio.sleep(0.2)
            assert status["stall"] is None and status["notes"] == []
            trainer = status["components"]["trainer"]["pid"]
            os.kill(trainer, signal.SIGSTOP)
            try:
                deadline = time.monotonic() + 10
                while (status := structured(await client.call_tool("rl_check_status", {"run_id": run_id})))["stall"] is None:
                    assert time.monotonic() < deadline, status
                    await anyio.sleep(0.2)
                assert status["status"] == "running"
                assert status["stall"]["quiet_components"][0] == {
                    "component": "trainer", "quiet_seconds": status["stall"]["quiet_components"][0]["quiet_seconds"],
                    "stopped_by_signal": True,
                }
                assert "trainer is stopped by a signal" in status["stall"]["summary"]
                stopped = structured(await client.call_tool("rl_stop_training", {"run_id": run_id}))
            finally:
                if alive(trainer):
                    os.kill(trainer, signal.SIGCONT)
            assert stopped["status"] == "stopped" and stopped["leftover_pids"] == []
            assert not alive(trainer)

    anyio.run(scenario)
