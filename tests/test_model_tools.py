"""rl_test_inference, rl_sample and rl_evaluate through real MCP clients, against real endpoints:
the local policy served by ``hermes-rl-mcp policy``, a run's checkpoints, and a second
OpenAI-compatible server started here. Every process a call starts is verified gone after it."""

from __future__ import annotations

import os
import re
import time
from pathlib import Path

import anyio
import pytest
from mcp.client import Client

from hermes_rl_mcp.runs.procs import descendants
from mcp_helpers import ERAS, in_memory, over_stdio, refusal_text, structured
from plain_openai_server import plain_openai_server

SHORT_RUN = {"env.total_steps": 4, "env.steps_per_eval": 100, "env.use_wandb": False, "env.batch_size": 16,
             "trainer.batch_size": 16, "trainer.checkpoint_interval": 2}

FLAKY_ENV = """
    from hermes_rl_mcp.sdk import BaseEnv
    from hermes_rl_mcp.sdk.policy_client import scored_group


    class FlakyEnv(BaseEnv):
        \"\"\"Scores odd items 1.0 for every completion; raises on even items.\"\"\"

        name = "flaky"

        async def setup(self):
            self.count = 0

        async def get_next_item(self):
            self.count += 1
            return self.count

        async def collect_trajectories(self, item):
            group = await self.policy.chat([{"role": "user", "content": f"{item}+1"}], n=self.config.group_size, max_tokens=3)
            if item % 2 == 0:
                refuse_to_score(item)
            return scored_group(group, [1.0] * len(group.completions)), []

        async def evaluate(self, *args, **kwargs):
            return {}


    def refuse_to_score(item):
        raise ValueError(f"no score for item {item}")


    if __name__ == "__main__":
        FlakyEnv.cli()
"""

BROKEN_SETUP_ENV = """
    from hermes_rl_mcp.sdk import BaseEnv


    class BrokenEnv(BaseEnv):
        name = "broken"

        async def setup(self):
            load_the_data()

        async def get_next_item(self):
            return 0

        async def evaluate(self, *args, **kwargs):
            return {}


    def load_the_data():
        raise FileNotFoundError("data/train.jsonl")


    if __name__ == "__main__":
        BrokenEnv.cli()
"""

HANGING_ENV = """
    import time

    from hermes_rl_mcp.sdk import BaseEnv


    class HangingEnv(BaseEnv):
        name = "hanging"

        async def setup(self):
            print("setting up forever")
            time.sleep(3600)

        async def get_next_item(self):
            return 0

        async def evaluate(self, *args, **kwargs):
            return {}


    if __name__ == "__main__":
        HangingEnv.cli()
"""


def no_processes_left() -> None:
    """Every process a tool call started has ended (the in-memory server runs in this process)."""
    deadline = time.monotonic() + 5
    while (left := descendants(os.getpid())) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not left, f"processes left behind: {left}"


def no_scratch_left(state: Path) -> None:
    assert not list((state / "trials").glob("*")), "a trial's scratch directory was left behind"


async def select(client: Client, environment: str) -> None:
    structured(await client.call_tool("rl_select_environment", {"name": environment}))


@pytest.mark.parametrize("era", ERAS)
def test_trial_against_the_local_policy_reports_every_group(era: str, isolated_state: Path) -> None:
    async def scenario() -> dict:
        async with in_memory(era) as client:
            await select(client, "arithmetic")
            return structured(await client.call_tool("rl_test_inference", {"groups": 3}))

    result = anyio.run(scenario)
    assert result["endpoint"]["name"] == "local" and result["endpoint"]["kind"] == "local_init"
    assert (result["endpoint"]["seed"], result["endpoint"]["hidden_size"]) == (0, 64)  # trainer.seed, trainer.hidden_size
    assert result["groups_asked"] == result["groups_finished"] == 3 and not result["timed_out"] and result["error"] is None
    for group in result["groups"]:
        assert group["prompt"][0]["role"] == "user" and re.fullmatch(r"\d[+-]\d", group["prompt"][0]["content"])
        assert len(group["completions"]) == len(group["scores"]) == 8  # arithmetic's group_size
        assert all(text.lstrip("-").isdigit() for text in group["completions"])  # guided_choice held
        assert group["scores_differ"] == (len(set(group["scores"])) > 1)
    assert result["share_differing"] == sum(g["scores_differ"] for g in result["groups"]) / 3
    assert result["setup_seconds"] is not None and result["total_seconds"] < result["time_bound_seconds"]
    no_processes_left()
    no_scratch_left(isolated_state)


@pytest.mark.parametrize("era", ERAS)
def test_trial_against_an_operator_endpoint_sends_its_key_there_and_nowhere_else(
    era: str, isolated_state: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    key = "sk-test-" + os.urandom(8).hex()
    monkeypatch.setenv("PLAIN_ENDPOINT_KEY", key)
    with plain_openai_server(key) as plain:
        endpoints = tmp_path / "endpoints.yaml"
        endpoints.write_text(
            f"endpoints:\n  plain:\n    base_url: {plain.base_url}\n    model: {plain.model}\n    api_key_env: PLAIN_ENDPOINT_KEY\n"
        )
        monkeypatch.setenv("HERMES_RL_ENDPOINTS", str(endpoints))

        async def scenario() -> tuple[dict, str]:
            async with in_memory(era) as client:
                await select(client, "arithmetic")
                result = await client.call_tool("rl_test_inference", {"groups": 2, "endpoint": "plain"})
                return structured(result), result.content[0].text

        result, text = anyio.run(scenario)
    assert plain.authorizations == [f"Bearer {key}"] * 2  # one request per group, each with the key
    assert {body["model"] for body in plain.bodies} == {plain.model}
    assert result["endpoint"] == {
        "name": "plain", "kind": "openai", "model": plain.model, "base_url": plain.base_url,
        "key_variable": "PLAIN_ENDPOINT_KEY", "run_id": None, "step": None, "backend": "local", "checkpoint": None,
        "state": None, "lora_rank": None, "seed": None, "hidden_size": None,
    }
    for group in result["groups"]:
        a, op, b = group["prompt"][0]["content"][0], group["prompt"][0]["content"][1], group["prompt"][0]["content"][2:]
        right = int(a) + int(b) if op == "+" else int(a) - int(b)
        assert group["completions"] == [str(right + i) for i in range(8)]  # what the server answered, in order
        assert group["scores"][0] == 1.0 and all(s < 1.0 for s in group["scores"][1:])
    assert result["share_differing"] == 1.0
    assert key not in text
    for path in isolated_state.rglob("*"):
        if path.is_file():
            assert key.encode() not in path.read_bytes(), f"the key was written to {path}"
    no_processes_left()
    no_scratch_left(isolated_state)


def test_environment_errors_come_back_with_their_traceback(write_env, monkeypatch: pytest.MonkeyPatch, isolated_state: Path) -> None:
    write_env("flaky.py", FLAKY_ENV)
    monkeypatch.setenv("HERMES_RL_ENV_DIRS", str(write_env.root))

    async def scenario() -> dict:
        async with in_memory("auto") as client:
            await select(client, "flaky")
            return structured(await client.call_tool("rl_test_inference", {"groups": 4}))

    result = anyio.run(scenario)
    by_item = {int(g["item"]): g for g in result["groups"]}
    assert sorted(by_item) == [1, 2, 3, 4]
    for item in (2, 4):
        error = by_item[item]["error"]
        assert error["type"] == "ValueError" and error["message"] == f"no score for item {item}"
        assert any("refuse_to_score" in line for line in error["traceback"])
        assert error["traceback"][-1] == f"ValueError: no score for item {item}"
        assert len(by_item[item]["completions"]) == 4  # what the policy answered before the failure
    for item in (1, 3):
        assert by_item[item]["error"] is None and by_item[item]["scores"] == [1.0] * 4
    assert result["groups_finished"] == 2 and result["share_differing"] == 0.0  # equal scores teach nothing
    no_processes_left()


def test_a_failing_setup_is_reported_with_its_traceback(write_env, monkeypatch: pytest.MonkeyPatch, isolated_state: Path) -> None:
    write_env("broken.py", BROKEN_SETUP_ENV)
    monkeypatch.setenv("HERMES_RL_ENV_DIRS", str(write_env.root))

    async def scenario() -> dict:
        async with in_memory("auto") as client:
            await select(client, "broken")
            return structured(await client.call_tool("rl_test_inference", {"groups": 2}))

    result = anyio.run(scenario)
    assert result["groups"] == [] and result["groups_finished"] == 0 and not result["timed_out"]
    assert result["error"]["type"] == "FileNotFoundError" and result["error"]["message"] == "data/train.jsonl"
    assert any("load_the_data" in line for line in result["error"]["traceback"])
    no_processes_left()
    no_scratch_left(isolated_state)


def test_a_hanging_environment_is_cut_off_at_the_bound(write_env, monkeypatch: pytest.MonkeyPatch, isolated_state: Path) -> None:
    write_env("hanging.py", HANGING_ENV)
    monkeypatch.setenv("HERMES_RL_ENV_DIRS", str(write_env.root))

    async def scenario() -> dict:
        async with in_memory("legacy") as client:
            await select(client, "hanging")
            return structured(await client.call_tool("rl_test_inference", {"groups": 2, "time_limit_seconds": 5}))

    result = anyio.run(scenario)
    assert result["timed_out"] is True and result["groups"] == [] and result["groups_finished"] == 0
    assert result["error"]["type"] == "TimeoutError" and "5 s" in result["error"]["message"]
    assert "setting up forever" in result["log_tail"]
    no_processes_left()
    no_scratch_left(isolated_state)


@pytest.mark.parametrize("era", ERAS)
def test_trial_refusals_say_what_is_valid_and_change_nothing(era: str, isolated_state: Path) -> None:
    async def scenario() -> None:
        async with in_memory(era) as client:
            text = refusal_text(await client.call_tool("rl_test_inference", {}))
            assert "no environment is selected" in text
            await select(client, "arithmetic")
            before = structured(await client.call_tool("rl_get_current_config", {}))
            text = refusal_text(await client.call_tool("rl_test_inference", {"endpoint": "https://evil.example/v1"}))
            assert "no endpoint named" in text and "Valid endpoints: local" in text
            text = refusal_text(await client.call_tool("rl_test_inference", {"endpoint": "local", "run_id": "r-20260101-0000-abcdef"}))
            assert "not both" in text
            text = refusal_text(await client.call_tool("rl_test_inference", {"step": 3}))
            assert "pass run_id" in text
            text = refusal_text(await client.call_tool("rl_test_inference", {"run_id": "r-20260101-0000-abcdef"}))
            assert "no run with id" in text
            for groups in (0, 17, 2.5):
                text = refusal_text(await client.call_tool("rl_test_inference", {"groups": groups}))
                assert "groups" in text and "integer 1..16" in text
            text = refusal_text(await client.call_tool("rl_test_inference", {"time_limit_seconds": 1000}))
            assert "time_limit_seconds" in text
            assert structured(await client.call_tool("rl_get_current_config", {})) == before
            assert structured(await client.call_tool("rl_list_runs", {}))["count"] == 0

    anyio.run(scenario)
    no_processes_left()
    assert not (isolated_state / "trials").exists() or not list((isolated_state / "trials").iterdir())


def test_sample_and_evaluate_a_trained_run(isolated_state: Path) -> None:
    async def scenario() -> None:
        async with in_memory("legacy") as client:
            await select(client, "arithmetic")
            for field, value in SHORT_RUN.items():
                structured(await client.call_tool("rl_edit_config", {"field": field, "value": value}))
            run_id = structured(await client.call_tool("rl_start_training", {}))["run_id"]
            # A run that has written no checkpoint yet has nothing to sample or evaluate.
            text = refusal_text(await client.call_tool("rl_sample", {"run_id": run_id, "messages": [{"role": "user", "content": "3+4"}]}))
            assert f"run {run_id}" in text and "no checkpoint" in text
            text = refusal_text(await client.call_tool("rl_evaluate", {"run_id": run_id}))
            assert "no checkpoint" in text
            assert structured(await client.call_tool("rl_list_runs", {}))["count"] == 1
            run = await wait_for(client, run_id)
            assert run["status"] == "completed", run

        evaluated = []
        for era in ERAS:
            async with in_memory(era) as client:
                await check_sampling(client, run_id)
                evaluated.append(await check_evaluation(client, run_id, step=None if era == "legacy" else 2))
        # The held-out evaluation is greedy: the same checkpoint scores the same every time.
        async with in_memory("auto") as client:
            assert await check_evaluation(client, run_id, step=None) == evaluated[0]
        no_processes_left()

    anyio.run(scenario)
    no_scratch_left(isolated_state)


async def wait_for(client: Client, run_id: str, timeout: float = 120) -> dict:
    deadline = time.monotonic() + timeout
    while (status := structured(await client.call_tool("rl_check_status", {"run_id": run_id})))["status"] not in (
        "completed", "failed", "stopped"
    ):
        assert time.monotonic() < deadline, status
        await anyio.sleep(0.2)
    return status


async def check_sampling(client: Client, run_id: str) -> None:
    messages = [{"role": "user", "content": "3+4"}]
    greedy = structured(await client.call_tool("rl_sample", {"run_id": run_id, "messages": messages, "n": 3, "temperature": 0}))
    assert greedy["endpoint"]["step"] == 4 and greedy["endpoint"]["checkpoint"].endswith("step_4.npz")
    texts = [c["text"] for c in greedy["completions"]]
    assert len(texts) == 3 and len(set(texts)) == 1 and texts[0]  # greedy: three times the same answer
    assert all(c["tokens"] >= 1 for c in greedy["completions"]) and greedy["prompt_tokens"] > 0
    earlier = structured(await client.call_tool("rl_sample", {"run_id": run_id, "messages": messages, "step": 2, "max_tokens": 2}))
    assert earlier["endpoint"]["step"] == 2 and len(earlier["completions"]) == 1
    assert all(c["tokens"] <= 2 for c in earlier["completions"])

    text = refusal_text(await client.call_tool("rl_sample", {"run_id": run_id, "messages": messages, "step": 3}))
    assert "no checkpoint at step 3" in text and "steps 2, 4" in text
    for bad in ({"n": 0}, {"n": 17}, {"max_tokens": 0}, {"temperature": -1}, {"messages": []}):
        text = refusal_text(await client.call_tool("rl_sample", {"run_id": run_id, "messages": messages, **bad}))
        assert next(iter(bad)) in text
    text = refusal_text(await client.call_tool("rl_sample", {"run_id": "r-20260101-0000-abcdef", "messages": messages}))
    assert "no run with id" in text


async def check_evaluation(client: Client, run_id: str, step: int | None) -> float:
    """Evaluate the checkpoint at ``step`` (None: the final one); its eval/percent_correct."""
    started = structured(await client.call_tool("rl_evaluate", {"run_id": run_id, **({"step": step} if step else {})}))
    assert started["status"] == "starting" and started["evaluated_run"] == run_id
    assert started["checkpoint_step"] == (step or 4) and started["checkpoint"].endswith(f"step_{step or 4}.npz")
    status = await wait_for(client, started["run_id"])
    assert status["status"] == "completed", status
    assert set(status["components"]) == {"trainer", "env"}
    assert all(c["state"] in ("exited", "stopped") for c in status["components"].values())
    assert status["job"] == "evaluate" and status["evaluates"] == {"run_id": run_id, "step": step or 4}
    listed = {run["run_id"]: run for run in structured(await client.call_tool("rl_list_runs", {}))["runs"]}
    assert listed[started["run_id"]]["job"] == "evaluate" and listed[started["run_id"]]["evaluates"]["run_id"] == run_id
    assert listed[run_id]["job"] == "train" and listed[run_id]["evaluates"] is None  # the run it measured
    results = structured(await client.call_tool("rl_get_results", {"run_id": started["run_id"]}))
    assert results["history"]["eval/percent_correct"]["steps"] == [step or 4]
    assert results["config"]["run"]["evaluates"]["run_id"] == run_id
    text = refusal_text(await client.call_tool("rl_evaluate", {"run_id": started["run_id"]}))
    assert f"{started['run_id']} is an evaluation" in text and run_id in text
    score = results["final_metrics"]["eval/percent_correct"]
    assert 0.0 <= score <= 1.0
    return score


@pytest.mark.parametrize("era", ERAS)
def test_trial_over_stdio(era: str) -> None:
    async def scenario() -> dict:
        async with over_stdio(era) as client:
            await select(client, "reverse_text")
            return structured(await client.call_tool("rl_test_inference", {"groups": 2}))

    result = anyio.run(scenario)
    assert result["environment"] == "reverse_text" and result["groups_finished"] == 2
    assert all(g["completions"] and len(g["scores"]) == len(g["completions"]) for g in result["groups"])
    no_processes_left()


def test_operator_endpoint_problems_are_refusals(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    endpoints = tmp_path / "endpoints.yaml"
    monkeypatch.setenv("HERMES_RL_ENDPOINTS", str(endpoints))
    monkeypatch.delenv("UNSET_ENDPOINT_KEY", raising=False)

    async def scenario() -> None:
        async with in_memory("auto") as client:
            await select(client, "arithmetic")
            endpoints.write_text("endpoints:\n  nokey:\n    base_url: http://127.0.0.1:9/v1\n    model: m\n    api_key_env: UNSET_ENDPOINT_KEY\n")
            text = refusal_text(await client.call_tool("rl_test_inference", {"endpoint": "nokey"}))
            assert "UNSET_ENDPOINT_KEY, which is not set" in text
            text = refusal_text(await client.call_tool("rl_test_inference", {"endpoint": "other"}))
            assert "Valid endpoints: local, nokey" in text
            endpoints.write_text("endpoints:\n  bad:\n    base_url: file:///etc/passwd\n    model: m\n")
            text = refusal_text(await client.call_tool("rl_test_inference", {"endpoint": "bad"}))
            assert "endpoint 'bad'" in text and "base_url" in text

    anyio.run(scenario)
    no_processes_left()
