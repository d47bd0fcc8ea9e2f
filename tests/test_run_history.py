"""Resume and compare: real local runs, driven through real MCP clients in both eras and over stdio."""

from __future__ import annotations

import json
import time
from pathlib import Path

import anyio
import numpy as np
import pytest

from hermes_rl_mcp import runs
from hermes_rl_mcp.core.control import ControlPlane
from hermes_rl_mcp.metrics_log import read_metrics
from hermes_rl_mcp.runs.registry import Registry
from hermes_rl_mcp import run_document
from hermes_rl_mcp.settings import PACKAGE_DIR
from hermes_rl_mcp.trainer.checkpoints import load_checkpoint
from hermes_rl_mcp.trainer.local_learner import LocalLearner
from hermes_rl_mcp.trainer.settings import ResumePoint, TrainerConfig

from mcp_helpers import ERAS, in_memory, over_stdio, refusal_text, structured
from test_mcp_runs import SHORT_RUN, wait_for_status

BUNDLED_PROFILES = PACKAGE_DIR / "profiles"
PARENT_STEPS = SHORT_RUN["env.total_steps"]
MORE_STEPS = 6


def _wait(run_id: str, state: Path, timeout: float = 150) -> runs.RunStatus:
    deadline = time.monotonic() + timeout
    while (status := runs.check_status(run_id, state=state)).status not in runs.TERMINAL_STATES:
        assert time.monotonic() < deadline, f"run {run_id} stayed {status.status}"
        time.sleep(0.25)
    return status


@pytest.fixture(scope="module")
def parent_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """One finished 12-step local run of reverse_text, shared by the tests of this module."""
    home = tmp_path_factory.mktemp("history")
    control = ControlPlane(state_dir=home)
    control.select_environment("reverse_text")
    for field, value in SHORT_RUN.items():
        control.edit_config(field, value)
    started = runs.start_run(control.run_document(), state=home)
    finished = _wait(started.run_id, home)
    assert finished.status == "completed", finished.reason
    return home, started.run_id


@pytest.fixture
def history_home(parent_run: tuple[Path, str], monkeypatch: pytest.MonkeyPatch) -> tuple[Path, str]:
    home, run_id = parent_run
    monkeypatch.setenv("HERMES_RL_HOME", str(home))
    return home, run_id


def test_a_resumed_learner_holds_the_checkpoints_weights_and_optimiser_state(history_home, tmp_path: Path) -> None:
    home, parent = history_home
    results = runs.get_results(parent, state=home)
    final = results.final_checkpoint
    saved = load_checkpoint(Path(final))
    trainer = TrainerConfig.model_validate(results.config["trainer"])
    learner = LocalLearner(trainer, tmp_path, resume_from=ResumePoint(run_id=parent, step=saved.step, checkpoint=final))
    for name, value in saved.model.params.items():
        np.testing.assert_array_equal(learner.learner.model.params[name], value)
    assert learner.learner.optimizer.steps == PARENT_STEPS * trainer.passes_per_batch
    np.testing.assert_array_equal(learner.learner.optimizer.m["W2"], saved.optimizer_state["adam_m/W2"])
    assert learner.policy.step == PARENT_STEPS  # the policy endpoint reports the step it continues from
    # the weights' average goes on from the parent's, and answers the resumed run's evaluations
    assert saved.average is not None and learner.learner.steps_averaged == PARENT_STEPS
    assert not np.array_equal(saved.average.params["W2"], saved.model.params["W2"])
    for name, value in saved.average.params.items():
        np.testing.assert_array_equal(learner.learner.average.params[name], value)
        np.testing.assert_array_equal(learner.policy.evaluated.params[name], value)
    fresh = LocalLearner(trainer, tmp_path)
    assert not np.array_equal(fresh.learner.model.params["W2"], saved.model.params["W2"])


@pytest.mark.parametrize("era", ERAS)
def test_resume_continues_steps_metrics_and_optimiser(history_home, era: str, tmp_path: Path, monkeypatch) -> None:
    home, parent = history_home
    # The operator has locked one more field since the parent ran: the resumed run gets the profile as it is now.
    profile = tmp_path / "local.yaml"
    profile.write_text((BUNDLED_PROFILES / "local.yaml").read_text() + "  env.max_num_workers_per_node: 3\n")
    monkeypatch.setenv("HERMES_RL_PROFILE_LOCAL", str(profile))

    async def scenario() -> None:
        async with in_memory(era) as client:
            started = structured(await client.call_tool("rl_resume_training", {"run_id": parent, "steps": MORE_STEPS}))
            child = started["run_id"]
            assert child != parent and started["status"] == "starting"
            early = structured(await client.call_tool("rl_check_status", {"run_id": child}))
            assert early["resumed_from"]["run_id"] == parent and early["resumed_from"]["step"] == PARENT_STEPS
            assert early["step"] >= PARENT_STEPS and early["total_steps"] == PARENT_STEPS + MORE_STEPS

            final = await wait_for_status(client, child, {"completed", "failed", "stopped"}, timeout=150)
            assert final["status"] == "completed", final
            assert final["step"] == PARENT_STEPS + MORE_STEPS

            results = structured(await client.call_tool("rl_get_results", {"run_id": child}))
            assert results["resumed_from"]["checkpoint"].endswith(f"step_{PARENT_STEPS}.npz")
            assert results["config"]["run"]["resumed_from"]["run_id"] == parent
            assert results["config"]["env"]["max_num_workers_per_node"] == 3
            listed = {r["run_id"]: r for r in structured(await client.call_tool("rl_list_runs", {}))["runs"]}
            assert listed[child]["resumed_from"]["run_id"] == parent and listed[parent]["resumed_from"] is None

            # Steps count on: the trainer's and the environment's records all lie after the checkpoint.
            steps = {record["step"] for record in read_metrics(Path(final["run_dir"]) / "metrics.jsonl")}
            assert min(steps) == PARENT_STEPS + 1 and max(steps) == PARENT_STEPS + MORE_STEPS
            assert set(results["history"]["train/loss"]["steps"]) == set(range(PARENT_STEPS + 1, PARENT_STEPS + MORE_STEPS + 1))
            # Adam's step count went on from the parent's, so its moments were loaded, not reset.
            with np.load(results["final_checkpoint"]) as archive:
                passes = results["config"]["trainer"]["passes_per_batch"]
                assert int(archive["adam_steps"]) == (PARENT_STEPS + MORE_STEPS) * passes

            # Resuming the resumed run trains as many steps as it did by default, from its own end.
            again = structured(await client.call_tool("rl_resume_training", {"run_id": child}))
            assert again["run_id"] not in (parent, child)
            stopped = structured(await client.call_tool("rl_stop_training", {"run_id": again["run_id"]}))
            assert stopped["status"] == "stopped"
            assert run_document.load(Path(again["config_path"])).env.total_steps == PARENT_STEPS + 2 * MORE_STEPS

    anyio.run(scenario)


@pytest.mark.parametrize("era", ERAS)
def test_compare_as_tool_and_resource(history_home, era: str) -> None:
    home, parent = history_home
    control = ControlPlane(state_dir=home)
    control.select_environment("reverse_text")
    for field, value in {**SHORT_RUN, "env.total_steps": 4, "trainer.learning_rate": 0.01}.items():
        control.edit_config(field, value)
    other = runs.start_run(control.run_document(), state=home).run_id
    assert _wait(other, home).status == "completed"

    async def scenario() -> None:
        async with in_memory(era) as client:
            compared = structured(await client.call_tool("rl_compare_runs", {"run_ids": [other, parent]}))
            assert [run["run_id"] for run in compared["runs"]] == [other, parent]
            by_id = {run["run_id"]: run for run in compared["runs"]}
            assert by_id[parent]["step"] == PARENT_STEPS and by_id[other]["step"] == 4
            assert all(run["wall_seconds"] > 0 for run in compared["runs"])
            assert {"train/loss", "reward/mean", "eval/percent_correct"} <= set(compared["metrics"])
            for run in compared["runs"]:
                assert set(run["best_metrics"]) <= set(compared["metrics"])
                loss = run["best_metrics"]["train/loss"]
                assert loss["goal"] == "min" and loss["value"] <= run["final_metrics"]["train/loss"]
            assert compared["leaders"]["train/loss"] in (parent, other)
            differing = compared["differing_config"]
            assert differing["env.total_steps"] == {other: 4, parent: PARENT_STEPS}
            assert differing["trainer.learning_rate"][other] == 0.01
            assert set(differing) == {"env.total_steps", "trainer.learning_rate"}, "per-run fields must not show as differences"
            assert compared["same_config_fields"] > 20

            templates = {t.uri_template for t in (await client.list_resource_templates()).resource_templates}
            assert "rl://compare/{+run_ids}" in templates
            read = await client.read_resource(f"rl://compare/{other},{parent}")
            assert json.loads(read.contents[0].text) == compared

            # Asked again, the same; once a run's files change, the comparison follows them.
            assert structured(await client.call_tool("rl_compare_runs", {"run_ids": [other, parent]})) == compared
            # below every loss either run logged (a policy-gradient loss can be well below zero)
            lowest = min(run["best_metrics"]["train/loss"]["value"] for run in compared["runs"]) - 1.0
            with open(Path(home) / "runs" / other / "metrics.jsonl", "a") as handle:
                handle.write(json.dumps({"step": 4, "time": 1.0, "train/loss": lowest}) + "\n")
            changed = structured(await client.call_tool("rl_compare_runs", {"run_ids": [other, parent]}))
            assert changed["leaders"]["train/loss"] == other
            assert {run["run_id"]: run for run in changed["runs"]}[other]["best_metrics"]["train/loss"]["value"] == lowest

    anyio.run(scenario)


@pytest.mark.parametrize("era", ERAS)
def test_resume_and_compare_refusals_change_nothing(history_home, era: str) -> None:
    home, parent = history_home
    failed = "r-20260101-0000-000001"
    with Registry(home) as registry:  # a run that ended before saving a checkpoint
        (home / "runs" / failed).mkdir(parents=True, exist_ok=True)
        if registry.get_run(failed) is None:
            registry.insert_run(run_id=failed, environment="reverse_text", backend="local",
                                run_dir=str(home / "runs" / failed), total_steps=12, reason="run created")
            registry.transition(failed, "failed", "trainer exited with code 1", ended_at=time.time())
    control = ControlPlane(state_dir=home)
    control.select_environment("reverse_text")
    for field, value in SHORT_RUN.items():
        control.edit_config(field, value)
    going = runs.start_run(control.run_document(), state=home).run_id  # a run still going

    async def scenario() -> None:
        async with in_memory(era) as client:
            before = structured(await client.call_tool("rl_list_runs", {}))["count"]
            text = refusal_text(await client.call_tool("rl_resume_training", {"run_id": "r-20990101-0000-abcdef"}))
            assert "no run with id" in text
            text = refusal_text(await client.call_tool("rl_resume_training", {"run_id": failed}))
            assert "has no checkpoint to resume from" in text
            text = refusal_text(await client.call_tool("rl_resume_training", {"run_id": going}))
            assert ("is starting" in text or "is running" in text) and "rl_stop_training" in text
            text = refusal_text(await client.call_tool("rl_resume_training", {"run_id": parent, "steps": 0}))
            assert "steps" in text
            text = refusal_text(await client.call_tool("rl_compare_runs", {"run_ids": [parent]}))
            assert "run_ids" in text
            text = refusal_text(await client.call_tool("rl_compare_runs", {"run_ids": [parent, parent]}))
            assert "given more than once" in text
            text = refusal_text(await client.call_tool("rl_compare_runs", {"run_ids": [parent, "r-20990101-0000-abcdef"]}))
            assert "r-20990101-0000-abcdef" in text and "nothing was compared" in text
            assert structured(await client.call_tool("rl_list_runs", {}))["count"] == before
            with pytest.raises(Exception, match="no run with id"):
                await client.read_resource(f"rl://compare/{parent},r-20990101-0000-abcdef")
            assert structured(await client.call_tool("rl_stop_training", {"run_id": going}))["status"] in ("stopped", "completed")

    anyio.run(scenario)


@pytest.mark.parametrize("era", ERAS)
def test_compare_and_resume_over_stdio(history_home, era: str) -> None:
    home, parent = history_home

    async def scenario() -> None:
        async with over_stdio(era) as client:
            text = refusal_text(await client.call_tool("rl_compare_runs", {"run_ids": [parent, "r-20990101-0000-abcdef"]}))
            assert "r-20990101-0000-abcdef" in text
            tools = {tool.name for tool in (await client.list_tools()).tools}
            assert {"rl_resume_training", "rl_compare_runs"} <= tools
            listed = structured(await client.call_tool("rl_list_runs", {}))
            assert parent in {run["run_id"] for run in listed["runs"]}

    anyio.run(scenario)
