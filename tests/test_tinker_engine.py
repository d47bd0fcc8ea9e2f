"""The tinker backend against a real self-hosted engine (SkyRL tx on CPU, a tiny Qwen3 built
offline): the policy endpoint over a Tinker sampling client, preflight refusals, a whole run
driven through the MCP server with learning, and a run whose engine goes away.

The engine is started once for the module; the last test kills it.
"""

from __future__ import annotations

import os
import re
import time
from pathlib import Path

import anyio
import httpx
import pytest
import uvicorn
from mcp.client import Client
from mcp.client.stdio import StdioServerParameters

import tinker_engine
from mcp_helpers import console_script, refusal_text, structured

RUN_EDITS = {
    "run.backend": "tinker",
    "trainer.learning_rate": 0.02,
    "trainer.batch_size": 32,
    "env.total_steps": 20,
    "env.steps_per_eval": 10,
}


@pytest.fixture
def profile(tmp_path: Path, engine_paths: dict) -> Path:
    return tinker_engine.write_profile(tmp_path / "tinker.yaml", engine_paths["model_dir"])


def alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as handle:
            return handle.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


# --- the policy endpoint over a Tinker sampling client ------------------------------------------

def test_the_policy_endpoint_serves_token_ids_and_logprobs_from_the_engine(engine, engine_paths: dict, monkeypatch) -> None:
    from hermes_rl_mcp.trainer.policy_server import build_app
    from hermes_rl_mcp.trainer.settings import TinkerTrainerConfig
    from hermes_rl_mcp.trainer.tinker_learner import TinkerLearner

    monkeypatch.setenv("TINKER_BASE_URL", engine.base_url)
    monkeypatch.setenv("TINKER_API_KEY", tinker_engine.API_KEY)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    config = TinkerTrainerConfig(base_model=engine_paths["model_dir"], lora_rank=8, request_timeout=120)
    learner = TinkerLearner(config, Path("unused"), max_tokens=64, log=lambda message: None)

    async def scenario() -> None:
        await learner.start()
        try:
            server = uvicorn.Server(uvicorn.Config(build_app(learner.policy), host="127.0.0.1", port=0, log_level="warning"))
            # Serve in this event loop, as the trainer does, so the sampling client's calls share it.
            async with anyio.create_task_group() as tasks:
                tasks.start_soon(server.serve)
                while not server.started:
                    await anyio.sleep(0.02)
                port = server.servers[0].sockets[0].getsockname()[1]
                async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}/v1", timeout=120) as client:
                    await check_endpoint(client)
                server.should_exit = True
        finally:
            await learner.close()
        assert tinker_engine.adapter_status(engine, learner.model_id) == "unloaded"
        # The session's heartbeat ends with it: left running, it outlives a stopped engine and
        # warns of a failing connection from a background thread.
        heartbeat = learner.service.holder._session_heartbeat_task
        for _ in range(50):
            if heartbeat.done():
                break
            await anyio.sleep(0.1)
        assert heartbeat.cancelled()

    anyio.run(scenario)


async def check_endpoint(client: httpx.AsyncClient) -> None:
    messages = [{"role": "user", "content": "Write # many times."}]
    answer = (await client.post("/chat/completions", json={"messages": messages, "n": 4, "max_tokens": 8, "seed": 3})).json()
    assert len(answer["choices"]) == 4 and answer["prompt_token_ids"]
    for choice in answer["choices"]:
        assert 1 <= len(choice["token_ids"]) <= 8
        assert len(choice["logprobs"]["content"]) == len(choice["token_ids"])
        assert all(entry["logprob"] <= 0 for entry in choice["logprobs"]["content"])
        assert choice["finish_reason"] in ("stop", "length")
    # Concurrent requests are served concurrently, each from one sample call.
    async def one(seed: int) -> dict:
        return (await client.post("/completions", json={"prompt": "hello", "max_tokens": 8, "seed": seed})).json()

    by_seed: dict[int, dict] = {}
    async with anyio.create_task_group() as tasks:
        for seed in range(4):
            tasks.start_soon(_collect, by_seed, seed, one(seed))
    assert sorted(by_seed) == [0, 1, 2, 3] and all(len(r["choices"][0]["token_ids"]) >= 1 for r in by_seed.values())
    # A stop string ends the completion at the token that completes it, and is not in the text.
    full = by_seed[0]["choices"][0]
    stop = next((ch for ch in full["text"][1:] if ch.isprintable() and not ch.isspace()), None)
    assert stop is not None, full
    stopped = (await client.post("/completions", json={"prompt": "hello", "max_tokens": 8, "seed": 0, "stop": [stop]})).json()
    choice = stopped["choices"][0]
    assert stop not in choice["text"]
    assert len(choice["logprobs"]["token_logprobs"]) == len(choice["token_ids"])
    if choice["token_ids"] == full["token_ids"][: len(choice["token_ids"])]:  # the engine sampled the same again
        assert choice["finish_reason"] == "stop" and len(choice["token_ids"]) < len(full["token_ids"]) + 1
    refused = await client.post("/chat/completions", json={"messages": messages, "guided_choice": ["yes", "no"]})
    assert refused.status_code == 400 and "guided_choice is not supported on the tinker backend" in refused.text


async def _collect(results: dict, key: int, awaitable) -> None:
    results[key] = await awaitable


# --- refusals before anything is spawned ------------------------------------------------------

def test_preflight_refuses_with_what_to_do(engine, engine_paths: dict, profile: Path, tmp_path: Path, monkeypatch) -> None:
    from hermes_rl_mcp.server import build_server

    for name, value in tinker_engine.server_environment(engine, profile, tmp_path / "state").items():
        monkeypatch.setenv(name, value)

    async def attempt(environment: str = "emit_text") -> str:
        async with Client(build_server(), mode="legacy") as client:
            structured(await client.call_tool("rl_select_environment", {"name": environment}))
            structured(await client.call_tool("rl_edit_config", {"field": "run.backend", "value": "tinker"}))
            return refusal_text(await client.call_tool("rl_start_training", {}))

    monkeypatch.delenv("TINKER_API_KEY")
    assert "needs TINKER_API_KEY" in anyio.run(attempt)
    monkeypatch.setenv("TINKER_API_KEY", "not-a-tinker-key")
    assert "must start with 'tml-'" in anyio.run(attempt)
    monkeypatch.setenv("TINKER_API_KEY", tinker_engine.API_KEY)
    monkeypatch.setenv("TINKER_BASE_URL", "http://127.0.0.1:9")  # nothing listens on the discard port
    assert "did not answer within" in anyio.run(attempt)
    monkeypatch.setenv("TINKER_BASE_URL", engine.base_url)
    tinker_engine.write_profile(profile, engine_paths["model_dir"], base_model="Qwen/Qwen3-8B")
    assert "does not serve trainer.base_model 'Qwen/Qwen3-8B'" in anyio.run(attempt)
    tinker_engine.write_profile(profile, engine_paths["model_dir"])
    monkeypatch.setenv("HERMES_RL_ENV_DIRS", "")
    assert "guided_choice" in anyio.run(attempt, "arithmetic")
    assert not (tmp_path / "state" / "runs").exists() or not list((tmp_path / "state" / "runs").iterdir())


# --- a whole run through the MCP server --------------------------------------------------------

def server(engine, profile: Path, state: Path) -> StdioServerParameters:
    env = {**tinker_engine.server_environment(engine, profile, state), "PATH": os.environ["PATH"]}
    return StdioServerParameters(command=console_script(), args=[], env=env)


async def start_run(client: Client) -> str:
    structured(await client.call_tool("rl_select_environment", {"name": "emit_text"}))
    for field, value in RUN_EDITS.items():
        structured(await client.call_tool("rl_edit_config", {"field": field, "value": value}))
    return structured(await client.call_tool("rl_start_training", {}))["run_id"]


async def wait_until(client: Client, run_id: str, wanted: set[str], timeout: float) -> dict:
    deadline = time.monotonic() + timeout
    while (status := structured(await client.call_tool("rl_check_status", {"run_id": run_id})))["status"] not in wanted:
        assert time.monotonic() < deadline, status
        await anyio.sleep(0.5)
    return status


def test_a_run_trains_the_llm_through_the_mcp_server_and_learns(engine, profile: Path, tmp_path: Path) -> None:
    async def scenario() -> dict:
        async with Client(server(engine, profile, tmp_path / "state"), mode="legacy") as client:
            run_id = await start_run(client)
            running = await wait_until(client, run_id, {"running", "failed", "completed"}, timeout=300)
            assert running["status"] == "running", running
            final = await wait_until(client, run_id, {"completed", "failed", "stopped"}, timeout=600)
            assert final["status"] == "completed", final
            assert final["step"] == final["total_steps"] == 20
            results = structured(await client.call_tool("rl_get_results", {"run_id": run_id}))
            trainer_log = structured(await client.call_tool("rl_get_logs", {"run_id": run_id, "component": "trainer", "lines": 100}))
            # The trained LoRA, evaluated as an agent would: its final sampler weights served afresh.
            started = structured(await client.call_tool("rl_evaluate", {"run_id": run_id}))
            evaluated = await wait_until(client, started["run_id"], {"completed", "failed", "stopped"}, timeout=300)
            assert evaluated["status"] == "completed", evaluated
            evaluation = structured(await client.call_tool("rl_get_results", {"run_id": started["run_id"]}))
            policy_log = structured(await client.call_tool("rl_get_logs", {"run_id": started["run_id"], "component": "trainer", "lines": 100}))
            sampled = structured(await client.call_tool("rl_sample", {
                "run_id": run_id, "messages": [{"role": "user", "content": "Write # many times."}], "n": 4, "max_tokens": 8,
            }))
            return {"final": final, "results": results, "log": trainer_log["text"], "evaluation": evaluation,
                    "evaluation_log": policy_log["text"], "sampled": sampled}

    outcome = anyio.run(scenario)
    results = outcome["results"]
    assert results["backend"] == "tinker"
    assert results["final_checkpoint"].startswith("tinker://")
    final = [c for c in results["checkpoints"] if c["kind"] == "final"]
    assert final and final[0]["sampler_path"].startswith("tinker://") and final[0]["exists"] is None
    for metric in ("train/loss", "reward/mean", "advantages/mean", "time/forward_backward", "time/optim_step",
                   "time/weight_sync", "train/batch_wait_time", "throughput/tokens_per_second"):
        assert metric in results["final_metrics"], metric
    rewards = results["history"]["reward/mean"]["values"]
    assert len(rewards) == 20
    first, last = sum(rewards[:3]) / 3, sum(rewards[-3:]) / 3
    assert last > first + 0.2, f"mean reward did not rise over the initial policy: {rewards}"
    # Nothing left running, and the run's LoRA adapter is released on the engine.
    pids = [c["pid"] for c in outcome["final"]["components"].values() if c["pid"]] + [outcome["final"]["supervisor_pid"]]
    deadline = time.monotonic() + 5
    while any(alive(pid) for pid in pids) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not [pid for pid in pids if alive(pid)]
    (model_id,) = re.findall(r"released LoRA adapter (\S+)", outcome["log"])
    assert tinker_engine.adapter_status(engine, model_id) == "unloaded"
    # The evaluation measured the trained policy, well above the initial one.
    # Its adapter was released, so the engine no longer serves the run's sampler weights: the
    # evaluation loaded the saved training state into an adapter of its own, and released that.
    evaluation = outcome["evaluation"]
    assert evaluation["final_metrics"]["eval/percent_correct"] > first + 0.2, evaluation["final_metrics"]
    assert evaluation["step"] == 20, evaluation["step"]
    policy_log = outcome["evaluation_log"]
    assert "loading the run's training state" in policy_log, policy_log
    (served_id,) = re.findall(r"released LoRA adapter (\S+)", policy_log)
    assert tinker_engine.adapter_status(engine, served_id) == "unloaded"
    # rl_sample of the finished run takes the same path, and samples the trained policy.
    sampled = outcome["sampled"]
    assert sampled["endpoint"]["step"] == 20 and len(sampled["completions"]) == 4, sampled
    texts = "".join(c["text"] for c in sampled["completions"])
    assert texts and texts.count("#") / len(texts) > first + 0.2, sampled["completions"]


def test_a_stopped_run_ends_every_process_and_releases_its_adapter(engine, profile: Path, tmp_path: Path) -> None:
    async def scenario() -> tuple[dict, dict, str, float]:
        async with Client(server(engine, profile, tmp_path / "state"), mode="legacy") as client:
            run_id = await start_run(client)
            running = await wait_until(client, run_id, {"running"}, timeout=300)
            while structured(await client.call_tool("rl_check_status", {"run_id": run_id}))["step"] < 1:
                await anyio.sleep(0.2)
            began = time.monotonic()
            stopped = structured(await client.call_tool("rl_stop_training", {"run_id": run_id}))
            took = time.monotonic() - began
            log = structured(await client.call_tool("rl_get_logs", {"run_id": run_id, "component": "trainer", "lines": 100}))
            return running, stopped, log["text"], took

    running, stopped, log, took = anyio.run(scenario)
    assert stopped["status"] == "stopped" and stopped["reason"] == "stopped on request", stopped
    assert stopped["leftover_pids"] == [] and took < 35, (stopped, took)  # the engine finishes queued samples first
    pids = [c["pid"] for c in running["components"].values() if c["pid"]] + [running["supervisor_pid"]]
    assert not [pid for pid in pids if alive(pid)]
    (model_id,) = re.findall(r"released LoRA adapter (\S+)", log)
    assert tinker_engine.adapter_status(engine, model_id) == "unloaded"


def test_a_run_whose_engine_goes_away_fails_within_seconds(engine, profile: Path, tmp_path: Path) -> None:
    """Last in the module: it kills the module's engine."""

    async def scenario() -> tuple[dict, float]:
        async with Client(server(engine, profile, tmp_path / "state"), mode="legacy") as client:
            run_id = await start_run(client)
            await wait_until(client, run_id, {"running"}, timeout=300)
            while structured(await client.call_tool("rl_check_status", {"run_id": run_id}))["step"] < 2:
                await anyio.sleep(0.2)
            engine.kill_engine()
            os.kill(engine.api_pid, 9)
            killed = time.monotonic()
            failed = await wait_until(client, run_id, {"failed", "completed", "stopped"}, timeout=60)
            return failed, time.monotonic() - killed

    failed, seconds = anyio.run(scenario)
    assert failed["status"] == "failed", failed
    assert failed["failed_component"] == "trainer" and "stopped answering" in (failed["log_tail"] or ""), failed
    assert seconds < 20, f"the run noticed its engine was gone only after {seconds:.0f} s"
