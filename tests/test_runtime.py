"""The environment runtime end to end: real environment processes against a real sampling policy
(tests/fake_policy.py) and, for ``serve``, the real trajectory API."""

from __future__ import annotations

import asyncio
import json
import re
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
import yaml

from hermes_rl_mcp.metrics_log import read_metrics
from hermes_rl_mcp.sdk.base import APIServerConfig
from hermes_rl_mcp.sdk.multiturn import PrefixMismatchError, run_episode
from hermes_rl_mcp.sdk.policy_client import PolicyClient, PolicyError

sys.path.insert(0, str(Path(__file__).resolve().parent))
from fake_policy import ASSISTANT, END, USER, BigramModel, ServerThread, create_app, decode, next_tokens  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
ENV_DIR = ROOT / "environments"
sys.path.insert(0, str(ENV_DIR))

import arithmetic  # noqa: E402
import navigation  # noqa: E402

DIGITS = "0123456789-"


@pytest.fixture(scope="module")
def digit_policy() -> Iterator[tuple[str, BigramModel]]:
    model = BigramModel(DIGITS, seed=1, end_bias=1.0)
    with ServerThread(create_app(model, seed=2)) as server:
        yield server.url, model


@pytest.fixture(scope="module")
def move_policy() -> Iterator[tuple[str, BigramModel]]:
    model = BigramModel("LR", seed=3, end_bias=1.5)
    with ServerThread(create_app(model, seed=4)) as server:
        yield server.url, model


def run_env(name: str, mode: str, config: dict, *args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    path = Path(config["run"]["dir"]) / "run.yaml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(config))
    return subprocess.run(
        [sys.executable, str(ENV_DIR / f"{name}.py"), mode, "--config", str(path), "--env.use_wandb", "false", *args],
        capture_output=True, text=True, timeout=timeout,
    )


def split_turns(tokens: list[int]) -> list[tuple[int, list[int]]]:
    """(role token, content tokens incl. a closing END if present) per message."""
    turns: list[tuple[int, list[int]]] = []
    for tok in tokens:
        if tok in (USER, ASSISTANT):
            turns.append((tok, []))
        else:
            turns[-1][1].append(tok)
    return turns


def test_process_writes_scored_groups_with_the_policys_tokens_and_logprobs(tmp_path: Path, digit_policy: tuple[str, BigramModel]) -> None:
    url, model = digit_policy
    out = run_env("arithmetic", "process", {"run": {"dir": str(tmp_path), "policy_url": url + "/v1"}}, "--env.total_steps", "6", "--env.group_size", "4")
    assert out.returncode == 0, out.stderr
    summary = json.loads(out.stdout.strip().splitlines()[-1])
    groups = [json.loads(line) for line in Path(summary["path"]).read_text().splitlines()]
    assert len(groups) == summary["groups_written"] == 6
    train, held_out = arithmetic.split_problems()
    train_texts = {arithmetic.problem_text(p) for p in train}
    for group in groups:
        assert len(group["tokens"]) == len(group["masks"]) == len(group["inference_logprobs"]) == len(group["scores"]) == 4
        assert len(set(group["scores"])) > 1  # equal-score groups are dropped
        for tokens, masks, logprobs, score in zip(group["tokens"], group["masks"], group["inference_logprobs"], group["scores"]):
            assert len(tokens) == len(masks) == len(logprobs)
            (user_role, user_content), (assistant_role, reply) = split_turns(tokens)
            assert (user_role, assistant_role) == (USER, ASSISTANT) and user_content[-1] == END
            problem = decode(user_content)
            assert problem in train_texts  # never a held-out problem
            prompt_len = 2 + len(user_content)
            assert masks[:prompt_len] == [-100] * prompt_len and logprobs[:prompt_len] == [1.0] * prompt_len
            assert masks[prompt_len:] == tokens[prompt_len:] == reply
            # every completion logprob is the policy's own logprob of that token at temperature 1,
            # over the tokens the answer constraint left open; the group says which constraint
            assert group["generation_params"] == {"guided_choice": arithmetic.ANSWER_CHOICES}
            prev = ASSISTANT
            for index, (tok, lp) in enumerate(zip(reply, logprobs[prompt_len:])):
                allowed = next_tokens(decode(reply[:index]), arithmetic.ANSWER_CHOICES)
                assert lp == pytest.approx(model.distribution(prev, 1.0, allowed)[tok])
                prev = tok
            assert decode(reply) in arithmetic.ANSWER_CHOICES
            a, op, b = int(problem[0]), problem[1], int(problem[2])
            assert score == arithmetic.score_answer(decode(reply), arithmetic.solve((a, op, b)))
    metrics = read_metrics(tmp_path / "metrics.jsonl")
    assert metrics[-1]["env/groups_sent"] == 6
    assert "train/percent_correct" in metrics[-1] and metrics[-1]["train/completion_length"] > 0


def test_groups_longer_than_max_token_length_are_dropped_and_said_so(tmp_path: Path, digit_policy: tuple[str, BigramModel]) -> None:
    url, _ = digit_policy
    out = run_env("arithmetic", "process", {"run": {"dir": str(tmp_path), "policy_url": url + "/v1"}},
                  "--env.total_steps", "1", "--env.group_size", "4", "--env.max_token_length", "4")
    assert out.returncode == 1, out.stderr  # nothing fits: no group written
    summary = json.loads(out.stdout.strip().splitlines()[-1])
    assert summary["groups_written"] == 0
    said = re.findall(r"dropped a group \((\d+) so far\): a sequence has \d+ tokens, more than env.max_token_length 4", out.stderr)
    assert said[:3] == ["1", "2", "4"] and "3" not in said, out.stderr  # said at 1, 2, 4, 8...: not at every group


def test_process_multi_turn_masks_only_assistant_tokens_and_scores_discounted_return(tmp_path: Path, move_policy: tuple[str, BigramModel]) -> None:
    url, model = move_policy
    out = run_env("navigation", "process", {"run": {"dir": str(tmp_path), "policy_url": url + "/v1"}}, "--env.total_steps", "3", "--env.group_size", "4", "--env.discount_factor", "0.8")
    assert out.returncode == 0, out.stderr
    summary = json.loads(out.stdout.strip().splitlines()[-1])
    groups = [json.loads(line) for line in Path(summary["path"]).read_text().splitlines()]
    assert len(groups) == 3
    train, _ = navigation.split_pairs(6)
    for group in groups:
        assert len(group["tokens"]) == 4
        for tokens, masks, logprobs, score in zip(group["tokens"], group["masks"], group["inference_logprobs"], group["scores"]):
            position = 0
            replies: list[str] = []
            start_goal = None
            for role, content in split_turns(tokens):
                span = slice(position + 1, position + 1 + len(content))
                if role == ASSISTANT:
                    # generated tokens are trained on, with the policy's logprobs; a reply cut
                    # at max_tokens gets its closing END from the template, masked
                    generated = content
                    if masks[span][-1] == -100:
                        generated = content[:-1]
                        assert content[-1] == END and len(generated) == navigation.MAX_ACTION_TOKENS
                    assert masks[span][: len(generated)] == generated
                    assert all(lp <= 0 for lp in logprobs[span][: len(generated)])
                    replies.append(decode(generated))
                else:
                    assert masks[span] == [-100] * len(content)
                    text = decode(content)
                    if start_goal is None:
                        position_text, goal_text = re.findall(r"\d+", text)
                        start_goal = (int(position_text), int(goal_text))
                assert masks[position] == -100  # role token
                position = span.stop
            assert start_goal in train
            success, expected = navigation.play_script(*start_goal, replies, length=6, max_turns=8, discount_factor=0.8)
            assert score == pytest.approx(expected)
            assert len(replies) <= 8


def test_evaluate_runs_the_held_out_split_and_writes_its_metrics(tmp_path: Path, digit_policy: tuple[str, BigramModel]) -> None:
    url, model = digit_policy
    out = run_env("arithmetic", "evaluate", {"run": {"dir": str(tmp_path), "policy_url": url + "/v1"}})
    assert out.returncode == 0, out.stderr
    result = json.loads(out.stdout.strip().splitlines()[-1])
    # the bigram policy's greedy reply does not depend on the problem: recompute it here
    reply, _, _ = model.sample([ASSISTANT], 4, 0.0, __import__("random").Random(0), arithmetic.ANSWER_CHOICES)
    _, held_out = arithmetic.split_problems()
    expected = sum(arithmetic.score_answer(decode(reply), arithmetic.solve(p)) == 1.0 for p in held_out) / len(held_out)
    assert result["eval/percent_correct"] == pytest.approx(expected)
    logged = [m for m in read_metrics(tmp_path / "metrics.jsonl") if "eval/percent_correct" in m]
    assert logged and logged[-1]["eval/percent_correct"] == pytest.approx(expected)


def test_an_endpoint_that_ignores_guided_choice_is_reported_not_trained_on() -> None:
    model = BigramModel("0123456789-abc", seed=7, end_bias=-1.0)  # free to answer outside the choices
    with ServerThread(create_app(model, seed=8, honour_guided_choice=False)) as server:

        async def ask() -> None:
            client = PolicyClient([APIServerConfig(base_url=server.url + "/v1")])
            try:
                await client.chat([{"role": "user", "content": "7-9"}], n=16, max_tokens=4, guided_choice=["-2", "3"])
            finally:
                await client.aclose()

        with pytest.raises(PolicyError, match="ignored guided_choice"):
            asyncio.run(ask())


def test_multi_turn_helper_refuses_a_policy_whose_template_is_not_prefix_consistent() -> None:
    model = BigramModel("LR", seed=5, end_bias=-5.0)  # long replies, so episodes have several turns
    with ServerThread(create_app(model, seed=6, consistent_template=False)) as server:

        async def play() -> None:
            client = PolicyClient([APIServerConfig(base_url=server.url + "/v1")])
            corridor = navigation.Corridor(0, 5, 6)
            try:
                await run_episode(client, "at 0 goal 5", corridor.act, max_turns=8, discount_factor=0.9, max_tokens=2)
            finally:
                await client.aclose()

        with pytest.raises(PrefixMismatchError, match="prefix-consistent"):
            asyncio.run(play())


def test_serve_feeds_the_trajectory_api_until_total_steps(tmp_path: Path, digit_policy: tuple[str, BigramModel]) -> None:
    from hermes_rl_mcp.api.app import create_app as create_api

    url, model = digit_policy
    batch_size, group_size, total_steps, offpolicy = 8, 4, 6, 1
    train_seconds = 0.3  # this test plays the trainer: a batch is "trained" this long after it is taken
    taken_at: list[float] = []
    served_at: dict[int, float] = {}  # step -> when the policy endpoint first reported it
    model.served_step = 0
    with ServerThread(create_api()) as api:
        config = {
            "run": {"dir": str(tmp_path), "api_url": api.url, "policy_url": url + "/v1"},
            "env": {"group_size": group_size, "total_steps": total_steps, "steps_per_eval": 2, "max_batches_offpolicy": offpolicy},
        }
        path = tmp_path / "run.yaml"
        path.write_text(yaml.safe_dump(config))
        env = subprocess.Popen(
            [sys.executable, str(ENV_DIR / "arithmetic.py"), "serve", "--config", str(path), "--env.use_wandb", "false"],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )
        try:
            time.sleep(0.5)  # the environment comes up first and waits for a trainer
            batches: list[list[dict]] = []
            max_queue = 0
            with httpx.Client(base_url=api.url, timeout=10) as http:
                http.post("/register", json={"batch_size": batch_size, "max_token_len": 64, "num_steps": total_steps, "checkpoint_dir": "", "save_checkpoint_interval": -1, "starting_step": 0, "wandb_group": None, "wandb_project": None}).raise_for_status()
                deadline = time.monotonic() + 60
                while env.poll() is None and time.monotonic() < deadline:
                    max_queue = max(max_queue, http.get("/status").json()["queue_size"])
                    if len(batches) < total_steps:
                        batch = http.get("/batch").json()["batch"]
                        if batch:
                            batches.append(batch)
                            taken_at.append(time.time())
                    trained = sum(1 for taken in taken_at if time.time() - taken >= train_seconds)
                    if trained > model.served_step:
                        model.served_step = trained
                        served_at[trained] = time.time()
                    time.sleep(0.05)
            rc = env.wait(timeout=30)
        finally:
            model.served_step = None
            if env.poll() is None:
                env.kill()
        stderr = env.stderr.read() if env.stderr else ""
        assert rc == 0, stderr
    assert len(batches) == total_steps
    for batch in batches:
        assert sum(len(group["tokens"]) for group in batch) == batch_size
        for group in batch:
            assert len(set(group["scores"])) > 1
            assert all(m == -100 for m in group["masks"][0][:2])
    # never more than max_batches_offpolicy batches queued ahead of the trainer
    assert max_queue * group_size <= offpolicy * batch_size
    metrics = read_metrics(tmp_path / "metrics.jsonl")
    evaluations = [m for m in metrics if "eval/percent_correct" in m]
    assert [m["step"] for m in evaluations] == [2, 4, 6]  # every steps_per_eval steps; the last one is also the final
    for evaluation in evaluations:  # each measured the policy trained on its step, not the one before
        assert evaluation["time"] >= served_at[evaluation["step"]], (evaluation, served_at)
    sent = max(m.get("env/groups_sent", 0) for m in metrics)
    assert sent >= total_steps * batch_size // group_size
    assert any("train/percent_correct" in m for m in metrics)
    assert "env/groups_dropped_same_score" in metrics[-1] or any("env/groups_dropped_same_score" in m for m in metrics)


def test_a_group_posted_while_the_api_is_away_is_delivered_once_it_is_back() -> None:
    """Posting a group retries while the trajectory API cannot be reached (a restart, a
    kept-alive connection closed as it is reused), so a hiccup costs no environment; a group
    the API refuses is raised at once, with its reason."""
    from hermes_rl_mcp.api.app import create_app as create_api
    from hermes_rl_mcp.sdk.api_client import TrajectoryAPIClient, TrajectoryAPIError

    group = {"tokens": [[5, 6, 7]] * 2, "masks": [[-100, 6, 7]] * 2, "scores": [1.0, -0.5], "env_id": None}
    api = ServerThread(create_api())

    async def post_while_away() -> float:
        client = TrajectoryAPIClient(api.url)
        try:
            sending = asyncio.create_task(client.send_group(group, patience_s=30))
            await asyncio.sleep(1.0)
            assert not sending.done()  # nothing listens yet: still trying
            await asyncio.to_thread(api.__enter__)
            await asyncio.wait_for(sending, 10)
            started = time.monotonic()
            with pytest.raises(TrajectoryAPIError, match="422") as refused:
                await client.send_group({"tokens": 3}, patience_s=30)
            assert refused.value.refused
            return time.monotonic() - started
        finally:
            await client.aclose()

    try:
        refusal_took = asyncio.run(post_while_away())
        assert refusal_took < 5
        assert httpx.get(f"{api.url}/status").json()["queue_size"] == 1
    finally:
        api.__exit__()
