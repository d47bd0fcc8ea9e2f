"""The trainer process end to end against a stand-in trajectory API, plus learning mechanics:
advantages, importance ratios and clipping, determinism, checkpoints."""

from __future__ import annotations

import json
import math
import os
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import uvicorn
import yaml
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from hermes_rl_mcp.metrics_log import read_metrics
from hermes_rl_mcp.trainer.checkpoints import load_checkpoint, save_checkpoint
from hermes_rl_mcp.trainer.constraints import ChoiceConstraint
from hermes_rl_mcp.trainer.grpo import DUAL_CLIP, BatchError, clipped_objective, flatten_groups, group_advantages
from hermes_rl_mcp.trainer.learner import INPUT_DECAY, Learner, average_decay, shielded_positions
from hermes_rl_mcp.trainer.model import STATISTICS, PolicyModel
from hermes_rl_mcp.trainer.sampling import generate
from hermes_rl_mcp.trainer.settings import TrainerConfig
from hermes_rl_mcp.trainer.tokenizer import END, CharTokenizer

TOK = CharTokenizer()


def reverse_groups(model: PolicyModel, rng: np.random.Generator, words: list[str], n: int = 4) -> list[dict[str, Any]]:
    """Groups of completions of ``words`` sampled from ``model``, scored by the share of their
    characters taken from the word, less a length penalty (graded, so groups carry signal)."""
    groups = []
    for word in words:
        prompt = TOK.generation_prompt([{"role": "user", "content": word}])
        samples = generate(model, prompt, n=n, max_tokens=len(word) + 2, temperature=1.0, rng=rng)
        texts = [TOK.decode(s.token_ids) for s in samples]
        scores = [sum(ch in word for ch in t) / max(len(t), 1) - 0.1 * abs(len(t) - len(word)) for t in texts]
        groups.append(
            {
                "tokens": [prompt + s.token_ids for s in samples],
                "masks": [[-100] * len(prompt) + s.token_ids for s in samples],
                "inference_logprobs": [[1.0] * len(prompt) + s.logprobs for s in samples],
                "scores": scores,
            }
        )
    return groups


# -- advantages and the objective ---------------------------------------------------------------


def test_group_relative_advantages() -> None:
    adv = group_advantages([1.0, 0.0, 0.5, 0.5])
    assert adv.mean() == pytest.approx(0.0, abs=1e-12)
    assert adv[0] > adv[2] == adv[3] > adv[1]
    assert adv.std() == pytest.approx(1.0, rel=1e-4)
    assert np.all(group_advantages([0.3, 0.3, 0.3]) == 0.0)  # no signal in an all-equal group
    np.testing.assert_allclose(group_advantages([2.0, 0.0], normalize=False), [1.0, -1.0])


def test_importance_ratio_uses_the_stale_logprobs_and_clips() -> None:
    logp = np.log(np.array([0.5, 0.5, 0.5, 0.5, 0.5]))
    behaviour = np.log(np.array([0.25, 0.25, 0.9, 0.9, np.nan]))  # ratios 2, 2, 0.56, 0.56, (on-policy) 1
    advantages = np.array([1.0, -1.0, 1.0, -1.0, 1.0])
    result = clipped_objective(logp, behaviour, advantages, clip_epsilon=0.2, normalizer=1.0)
    ratio = np.exp(logp - np.where(np.isnan(behaviour), logp, behaviour))
    # A > 0 with r above 1 + eps: clipped, no gradient. A < 0 with r above 1 + eps: unclipped, -r*A.
    # A > 0 with r below 1 - eps: unclipped, -r*A. A < 0 with r below 1 - eps: clipped, no gradient.
    expected_grad = np.array([0.0, ratio[1], -ratio[2], 0.0, -1.0])
    np.testing.assert_allclose(result.dlogp, expected_grad)
    expected_obj = [1.2 * 1.0, -ratio[1], ratio[2], -0.8, 1.0]
    assert result.loss == pytest.approx(-sum(expected_obj))
    assert result.clip_fraction == pytest.approx(4 / 5)
    # the gradient is the derivative of the loss: check one unclipped coordinate numerically
    bumped = logp.copy()
    bumped[2] += 1e-6
    up = clipped_objective(bumped, behaviour, advantages, clip_epsilon=0.2, normalizer=1.0).loss
    assert (up - result.loss) / 1e-6 == pytest.approx(result.dlogp[2], rel=1e-4)


def test_a_negative_advantage_stops_pushing_once_the_ratio_passes_the_dual_clip() -> None:
    """A token sampled at probability 0.001 that the policy now gives 0.5, in a sequence that
    scored below its group: plain PPO-clip would push it down with weight 500."""
    logp = np.log(np.array([0.5, 0.5, 0.5]))
    behaviour = np.log(np.array([0.001, 0.25, 0.001]))  # ratios 500, 2, 500
    advantages = np.array([-1.0, -1.0, 1.0])
    result = clipped_objective(logp, behaviour, advantages, clip_epsilon=0.2, normalizer=1.0)
    # beyond the bound: no gradient, and the objective is DUAL_CLIP * A; below it, -r * A as
    # before; a positive advantage is clipped at 1 + eps as before
    np.testing.assert_allclose(result.dlogp, [0.0, 2.0, 0.0])
    assert result.loss == pytest.approx(-(DUAL_CLIP * -1.0 + 2.0 * -1.0 + 1.2))
    assert np.isfinite(result.loss) and abs(result.loss) < 10


def test_a_negative_advantage_does_not_push_a_shielded_token_down() -> None:
    logp = np.array([-12.0, -12.0, -0.5, -0.5])
    advantages = np.array([-1.0, 1.0, -1.0, 1.0])
    plain = clipped_objective(logp, logp, advantages, clip_epsilon=0.2, normalizer=1.0)
    np.testing.assert_allclose(plain.dlogp, [1.0, -1.0, 1.0, -1.0])
    floored = clipped_objective(logp, logp, advantages, clip_epsilon=0.2, normalizer=1.0, shielded=logp < -7.0)
    # only the unlikely token with a negative advantage loses its gradient; a success still teaches
    np.testing.assert_allclose(floored.dlogp, [0.0, -1.0, 1.0, -1.0])


def test_the_learner_shields_explored_turns_and_unlikely_tokens_from_negative_advantages() -> None:
    from hermes_rl_mcp.trainer.exploration import ExploredTurns

    first = TOK.generation_prompt([{"role": "user", "content": "at 1 goal 3"}])
    second = TOK.generation_prompt(
        [{"role": "user", "content": "at 1 goal 3"}, {"role": "assistant", "content": "goal"}, {"role": "user", "content": "at 1 goal 3"}]
    )
    explored_reply, sampled_reply = TOK.encode("goal") + [END], TOK.encode("R") + [END]
    # an episode whose first turn was explored and whose second was sampled, and a plain sample
    episode = second + sampled_reply
    episode_mask = [-100] * len(first) + explored_reply + [-100] * (len(second) - len(first) - len(explored_reply)) + sampled_reply
    plain = first + sampled_reply
    group = {
        "tokens": [episode, plain],
        "masks": [episode_mask, [-100] * len(first) + sampled_reply],
        "scores": [0.0, 1.0],
    }
    explored = ExploredTurns()
    explored.add(first, explored_reply)
    learner = Learner(PolicyModel.initialise(TOK, hidden_size=8), TrainerConfig(), explored=explored)
    batch = flatten_groups([group])
    explored_positions, forked_positions = learner._explored(batch)
    assert explored_positions.tolist() == [True] * len(explored_reply) + [False] * (2 * len(sampled_reply))
    assert not forked_positions.any()
    explored.add(first, sampled_reply, "fork")  # the plain sample's turn, as if it had been forked
    assert learner._explored(batch)[1].tolist() == [False] * (len(explored_reply) + len(sampled_reply)) + [True] * len(sampled_reply)
    shielded = shielded_positions(np.zeros(len(batch.targets)), explored_positions)
    assert shielded.tolist() == explored_positions.tolist()
    unlikely = np.zeros(len(batch.targets))
    unlikely[-1] = -9.0
    assert shielded_positions(unlikely, explored_positions)[-1]


def test_a_forked_turn_that_scored_above_its_group_is_learnt_whatever_its_ratio() -> None:
    logp = np.array([-0.1, -0.1, -0.1])
    behaviour = np.array([-3.0, -3.0, -3.0])  # the policy has since made all three far likelier
    advantages = np.array([1.5, 1.5, -1.0])
    demonstrated = np.array([False, True, True])
    result = clipped_objective(logp, behaviour, advantages, clip_epsilon=0.2, normalizer=1.0, demonstrated=demonstrated)
    # a sampled token past 1 + eps is clipped; a forked one is pushed by its whole advantage;
    # a forked one below its group is left to the other terms (here the dual clip's floor)
    assert result.dlogp[0] == 0.0
    assert result.dlogp[1] == pytest.approx(-1.5)
    assert result.dlogp[2] == 0.0


def test_the_entropy_floor_loosens_only_sure_positions_of_sequences_that_did_not_score_above_their_group() -> None:
    from hermes_rl_mcp.trainer.learner import below_entropy_floor

    sure, unsure = [0.99, 0.005, 0.005], [0.5, 0.3, 0.2]
    probs = np.array([sure, sure, sure, unsure, unsure])
    advantages = np.array([1.2, -0.8, 0.0, -0.8, 1.2])
    # a sure position of a sequence that scored above its group keeps what it learned
    assert below_entropy_floor(probs, advantages, 0.3).tolist() == [False, True, True, False, False]


def test_the_number_path_learns_from_the_integers_that_scored_above_their_group() -> None:
    from hermes_rl_mcp.trainer.learner import rewarded_integers

    prompt = TOK.generation_prompt([{"role": "user", "content": "A pen costs 41 and a cup costs 36. Both?"}])
    other = TOK.generation_prompt([{"role": "user", "content": "A hat costs 7 and a bag costs 5. Both?"}])

    def group(question: list[int], replies: list[str], scores: list[float]) -> dict:
        encoded = [TOK.encode(r) + [END] for r in replies]
        return {"tokens": [question + r for r in encoded], "masks": [[-100] * len(question) + r for r in encoded], "scores": scores}

    groups = [group(prompt, ["77", "4", "seventy", "-3"], [1.0, 0.0, 1.0, 0.0]), group(other, ["12", "2000", "12"], [1.0, 1.0, 0.0])]
    model = PolicyModel.initialise(TOK, hidden_size=8)
    batch = flatten_groups(groups)
    feats = model.features(batch.prompts, batch.generated)
    found = rewarded_integers(batch, feats.prompt_of, TOK, batch.num_sequences)
    # "seventy" scored but is no integer, and 2000 is past what the path spells; the others lost
    assert found.value.tolist() == [77.0, 12.0]
    assert found.prompt.tolist() == [0, 1] and (found.weight < 0).all()
    # trained on them, the path's value moves from 0 to 77 and 12 (by their tokens alone it
    # reached about 31 and -5 in these steps)
    learner = Learner(model, TrainerConfig(explore_prompt_words=0.0))
    for _ in range(60):
        learner.step(groups)
    values = model._prompt_values(model.features([prompt, other], [[], []]))
    np.testing.assert_allclose(values, [77.0, 12.0], atol=3.0)


def test_kl_penalty_pulls_towards_the_reference() -> None:
    logp = np.log(np.array([0.6, 0.2]))
    ref = np.log(np.array([0.3, 0.4]))
    zero = np.zeros(2)
    result = clipped_objective(logp, logp, zero, clip_epsilon=0.2, normalizer=1.0, ref_logp=ref, kl_coef=1.0)
    assert result.kl > 0
    assert result.dlogp[0] > 0 and result.dlogp[1] < 0  # descending the loss moves logp towards ref


def test_each_batch_is_trained_on_for_passes_per_batch_steps_within_the_clip() -> None:
    model = PolicyModel.initialise(TOK, hidden_size=16, seed=2)
    groups = reverse_groups(model, np.random.default_rng(2), ["abc", "plane", "qwer"])
    best = [max(range(len(g["scores"])), key=g["scores"].__getitem__) for g in groups]

    def best_logprob(learner: Learner) -> float:
        total = 0.0
        for group, index in zip(groups, best):
            tokens, mask = group["tokens"][index], group["masks"][index]
            start = sum(1 for m in mask if m == -100)
            total += float(learner.model.completion_logprobs(tokens[:start], tokens[start:]).sum())
        return total

    before = best_logprob(Learner(model.copy(), TrainerConfig(hidden_size=16)))
    gains = {}
    for passes in (1, 3):
        learner = Learner(model.copy(), TrainerConfig(hidden_size=16, passes_per_batch=passes))
        metrics = learner.step(groups)
        assert learner.optimizer.steps == passes
        assert metrics["train/ratio_mean"] == pytest.approx(1.0, abs=1e-5)  # the first pass is on-policy
        assert ("train/clip_fraction_last_pass" in metrics) == (passes > 1)
        gains[passes] = best_logprob(learner) - before
    # each group's best completion gains more from three passes than from one
    assert gains[3] > gains[1] > 0


def test_an_input_no_batch_reaches_fades_toward_zero_and_only_the_input_table_decays() -> None:
    model = PolicyModel.initialise(TOK, hidden_size=16, seed=2)
    groups = reverse_groups(model, np.random.default_rng(2), ["abc", "plane", "qwer"])
    unseen = model.shape.offsets["window"] + TOK.encode("Z")[0]  # "Z" in the prompt's last slot: no prompt has it
    config = TrainerConfig(hidden_size=16, passes_per_batch=2)
    learner = Learner(model.copy(), config)
    learner.step(groups)
    shrink = (1.0 - config.learning_rate * INPUT_DECAY) ** 2
    assert INPUT_DECAY > 0
    np.testing.assert_allclose(learner.model.params["W_in"][unseen], model.params["W_in"][unseen] * shrink, rtol=1e-5)
    # a parameter no gradient reached and not in the input table stays where it was
    np.testing.assert_array_equal(learner.model.params["N_place"], model.params["N_place"])


def test_flatten_groups_trains_each_assistant_turn_with_its_own_prompt() -> None:
    first = TOK.generation_prompt([{"role": "user", "content": "at 1 goal 3"}])
    reply1 = TOK.encode("R") + [END]
    second = TOK.generation_prompt(
        [{"role": "user", "content": "at 1 goal 3"}, {"role": "assistant", "content": "R"}, {"role": "user", "content": "at 2 goal 3"}]
    )
    reply2 = TOK.encode("R") + [END]
    tokens = second + reply2
    masks = [-100] * len(first) + reply1 + [-100] * (len(second) - len(first) - len(reply1)) + reply2
    logprobs = [1.0] * len(tokens)
    logprobs[len(first)] = -0.7
    group = {"tokens": [tokens, tokens], "masks": [masks, masks], "scores": [1.0, 0.0], "inference_logprobs": [logprobs, logprobs]}
    batch = flatten_groups([group])
    assert batch.num_sequences == 2 and len(batch.targets) == 8
    assert batch.prompts[0] == first and batch.generated[0] == [] and batch.generated[1] == TOK.encode("R")
    assert batch.prompts[2] == second and batch.targets[3] == END
    assert batch.behaviour_logprobs[0] == -0.7 and math.isnan(batch.behaviour_logprobs[1])  # 1.0 placeholder
    assert batch.advantages[:4] == [pytest.approx(1.0, rel=1e-4)] * 4


def constrained_group(model: PolicyModel, choices: list[str]) -> dict[str, Any]:
    prompt = TOK.generation_prompt([{"role": "user", "content": "7-9"}])
    samples = generate(
        model, prompt, n=6, max_tokens=4, temperature=1.0, rng=np.random.default_rng(2), constraint=ChoiceConstraint(choices, TOK)
    )
    return {
        "tokens": [prompt + s.token_ids for s in samples],
        "masks": [[-100] * len(prompt) + s.token_ids for s in samples],
        "inference_logprobs": [[1.0] * len(prompt) + s.logprobs for s in samples],
        "scores": [float(TOK.decode(s.token_ids) == "-2") for s in samples],
        "generation_params": {"guided_choice": choices},
    }


def test_a_constrained_group_is_scored_under_the_mask_it_was_sampled_with() -> None:
    model = PolicyModel.initialise(TOK, hidden_size=16, seed=1)
    group = constrained_group(model, ["-2", "-12", "16", "3"])
    # the first step of a learner is on-policy: every importance ratio is exactly 1 under the mask
    learner = Learner(model.copy(), TrainerConfig(seed=1, hidden_size=16))
    metrics = learner.step([group])
    assert metrics["train/ratio_mean"] == pytest.approx(1.0, abs=1e-5)
    assert metrics["train/clip_fraction"] == 0.0
    # without the constraint recorded, the same tokens look far less likely than sampled
    unrecorded = {k: v for k, v in group.items() if k != "generation_params"}
    metrics = Learner(model.copy(), TrainerConfig(seed=1, hidden_size=16)).step([unrecorded])
    assert metrics["train/ratio_mean"] < 0.9


def test_a_group_that_breaks_its_constraint_is_refused() -> None:
    model = PolicyModel.initialise(TOK, hidden_size=16, seed=1)
    group = constrained_group(model, ["-2", "-12", "16", "3"])
    group["generation_params"] = {"guided_choice": ["5"]}
    with pytest.raises(BatchError, match="leaves the group's guided_choice"):
        flatten_groups([group], tokenizer=TOK)
    group["generation_params"] = {"guided_choice": "5"}
    with pytest.raises(BatchError, match="must be a list of strings"):
        flatten_groups([group], tokenizer=TOK)


# -- determinism and checkpoints ------------------------------------------------------------


def train_a_few_steps(seed: int, steps: int = 3) -> Learner:
    config = TrainerConfig(seed=seed, hidden_size=16, learning_rate=0.01)
    learner = Learner(PolicyModel.initialise(TOK, hidden_size=16, seed=seed), config)
    rng = np.random.default_rng(seed)
    for _ in range(steps):
        learner.step(reverse_groups(learner.model, rng, ["abc", "plane", "qwer"]))
    return learner


def test_same_seed_same_weights() -> None:
    a, b, c = train_a_few_steps(3), train_a_few_steps(3), train_a_few_steps(4)
    for name in a.model.params:
        np.testing.assert_array_equal(a.model.params[name], b.model.params[name])
    assert any(not np.array_equal(a.model.params[k], c.model.params[k]) for k in a.model.params)
    fresh = PolicyModel.initialise(TOK, hidden_size=16, seed=3)
    assert any(not np.array_equal(a.model.params[k], fresh.params[k]) for k in a.model.params)  # it did learn


def test_the_average_of_the_weights_follows_them_with_a_decay_that_ramps_up() -> None:
    """Each step folds the new weights into their average: at first with most weight on the new
    ones (decay (1 + n) / (10 + n) after n steps), then at the configured decay."""
    assert [average_decay(0.9, n) for n in (0, 1, 8, 80, 500)] == [0.1, 2 / 11, 0.5, 0.9, 0.9]
    assert average_decay(0.0, 5) == 0.0
    config = TrainerConfig(seed=2, hidden_size=16, learning_rate=0.01)
    learner = Learner(PolicyModel.initialise(TOK, hidden_size=16, seed=2), config)
    rng = np.random.default_rng(2)
    expected = {k: v.copy() for k, v in learner.model.params.items()}
    for n in range(12):
        learner.step(reverse_groups(learner.model, rng, ["abc", "plane", "qwer"]))
        decay = average_decay(config.average_decay, n)
        for k, v in learner.model.params.items():
            expected[k] = v.copy() if k in STATISTICS else decay * expected[k] + (1 - decay) * v
    for k in expected:
        np.testing.assert_allclose(learner.average.params[k], expected[k], rtol=1e-5, atol=1e-7)
    assert any(not np.allclose(learner.average.params[k], learner.model.params[k]) for k in expected)
    latest_only = Learner(PolicyModel.initialise(TOK, hidden_size=16, seed=2), config.model_copy(update={"average_decay": 0.0}))
    latest_only.step(reverse_groups(latest_only.model, rng, ["abc", "plane"]))
    for k in expected:
        np.testing.assert_array_equal(latest_only.average.params[k], latest_only.model.params[k])


def test_checkpoint_round_trip(tmp_path: Path) -> None:
    learner = train_a_few_steps(1, steps=2)
    path = save_checkpoint(tmp_path, 2, learner.model, learner.optimizer, average=learner.average, kind="periodic")
    loaded = load_checkpoint(path)
    assert loaded.step == 2
    prompt = TOK.generation_prompt([{"role": "user", "content": "hello"}])
    completion = TOK.encode("olleh") + [END]
    np.testing.assert_allclose(
        loaded.model.completion_logprobs(prompt, completion), learner.model.completion_logprobs(prompt, completion)
    )
    # the average is what a served checkpoint answers with, as evaluation did in the run
    assert loaded.served is loaded.average
    np.testing.assert_allclose(
        loaded.served.completion_logprobs(prompt, completion), learner.average.completion_logprobs(prompt, completion)
    )
    without_average = load_checkpoint(save_checkpoint(tmp_path, 3, learner.model, None, kind="periodic"))
    assert without_average.average is None and without_average.served is without_average.model
    assert int(loaded.optimizer_state["adam_steps"]) == 2 * learner.config.passes_per_batch
    record = json.loads((tmp_path / "checkpoints.jsonl").read_text().splitlines()[0])
    assert record["step"] == 2 and record["kind"] == "periodic" and Path(record["path"]) == path.resolve()


def test_a_checkpoint_of_another_model_layout_is_refused_with_the_reason(tmp_path: Path) -> None:
    learner = train_a_few_steps(1, steps=1)
    path = save_checkpoint(tmp_path, 1, learner.model, learner.optimizer, kind="periodic")
    with np.load(path) as archive:
        arrays = {k: archive[k] for k in archive.files}
    arrays["param/P_pos"] = arrays["param/P_pos"][:, :-4]  # as saved by a model with fewer pointer slots
    np.savez(path, **arrays)
    with pytest.raises(ValueError, match=r"different local policy model: its P_pos is \(16, \d+\), this trainer's is"):
        load_checkpoint(path)


def test_a_checkpoint_of_an_earlier_model_revision_is_refused_with_the_reason(tmp_path: Path) -> None:
    learner = train_a_few_steps(1, steps=1)
    path = save_checkpoint(tmp_path, 1, learner.model, learner.optimizer, kind="periodic")
    with np.load(path) as archive:
        arrays = {k: archive[k] for k in archive.files}
    meta = json.loads(str(arrays["meta"]))
    del meta["model_revision"]  # as saved before revisions were recorded: same shapes, other meanings
    arrays["meta"] = np.asarray(json.dumps(meta))
    np.savez(path, **arrays)
    with pytest.raises(ValueError, match=r"different local policy model \(revision 1, this trainer's is \d+\).*start a new run"):
        load_checkpoint(path)


# -- the trainer process ---------------------------------------------------------------------


class StandInAPI:
    """Serves /register and /batch like the trajectory API; every other /batch call is empty."""

    def __init__(self) -> None:
        self.registrations: list[dict[str, Any]] = []
        self.batches_served = 0
        self.calls = 0
        rng = np.random.default_rng(0)
        self.groups = reverse_groups(PolicyModel.initialise(TOK, seed=0), rng, ["abc", "hello", "xyz", "plane"], n=4)

    def app(self) -> Starlette:
        async def register(request: Request) -> JSONResponse:
            self.registrations.append(await request.json())
            return JSONResponse({"uuid": "t"})

        async def batch(request: Request) -> JSONResponse:
            self.calls += 1
            if not self.registrations or self.calls % 2:
                return JSONResponse({"batch": None})
            self.batches_served += 1
            return JSONResponse({"batch": self.groups})

        return Starlette(routes=[Route("/register", register, methods=["POST"]), Route("/batch", batch, methods=["GET"])])


@pytest.fixture()
def stand_in_api() -> Iterator[tuple[str, StandInAPI]]:
    api = StandInAPI()
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    server = uvicorn.Server(uvicorn.Config(api.app(), log_level="warning", lifespan="off"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    while not server.started:
        time.sleep(0.01)
    yield f"http://127.0.0.1:{sock.getsockname()[1]}", api
    server.should_exit = True
    thread.join(timeout=5)
    sock.close()


def run_cli(config_path: Path, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.endswith(("_KEY", "_TOKEN"))}
    return subprocess.run(
        [sys.executable, "-m", "hermes_rl_mcp", "trainer", "--config", str(config_path)],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=env,
    )


def test_trainer_process_registers_trains_logs_and_checkpoints(tmp_path: Path, stand_in_api: tuple[str, StandInAPI]) -> None:
    url, api = stand_in_api
    run_dir = tmp_path / "run"
    config = {
        "run": {"id": "r-test", "dir": str(run_dir), "api_url": url},
        "env": {"total_steps": 5, "use_wandb": False, "max_token_length": 64, "group_size": 4},
        "trainer": {"batch_size": 16, "checkpoint_interval": 2, "port": 0, "hidden_size": 16, "serve_after_final": 0},
    }
    path = tmp_path / "run.yaml"
    path.write_text(yaml.safe_dump(config))
    done = run_cli(path)
    assert done.returncode == 0, done.stderr
    assert "policy server listening on http://127.0.0.1:" in done.stderr
    registration = api.registrations[0]
    assert registration["batch_size"] == 16 and registration["num_steps"] == 5 and registration["max_token_len"] == 64
    assert api.batches_served == 5
    records = read_metrics(run_dir / "metrics.jsonl")
    assert [r["step"] for r in records] == [1, 2, 3, 4, 5]
    for record in records:
        for key in ("train/loss", "reward/mean", "advantages/mean", "train/learning_rate", "train/step_time"):
            assert isinstance(record[key], float), key
    assert records[0]["reward/mean"] == pytest.approx(np.mean([s for g in api.groups for s in g["scores"]]))
    lines = [json.loads(x) for x in (run_dir / "checkpoints.jsonl").read_text().splitlines()]
    assert [(x["step"], x["kind"]) for x in lines] == [(2, "periodic"), (4, "periodic"), (5, "final")]
    final = load_checkpoint(Path(lines[-1]["path"]))
    first = load_checkpoint(Path(lines[0]["path"]))
    assert final.step == 5
    assert any(not np.array_equal(final.model.params[k], first.model.params[k]) for k in final.model.params)


def test_bad_config_exits_non_zero_with_the_reason(tmp_path: Path) -> None:
    path = tmp_path / "run.yaml"
    path.write_text(yaml.safe_dump({"trainer": {"learning_rate": -1, "colour": "red"}}))
    done = run_cli(path)
    assert done.returncode != 0
    assert "trainer.learning_rate" in done.stderr and "trainer.colour" in done.stderr


def test_a_shared_step_size_moves_faint_entries_in_proportion_to_their_gradient() -> None:
    from hermes_rl_mcp.trainer.adam import Adam
    from hermes_rl_mcp.trainer.learner import SHARED_SCALE

    gradient = np.array([1.0, 1e-3, -1e-3])  # one entry the rewards ask for, two faint but steady
    moved = {}
    for shared in (frozenset(), frozenset({"R"})):
        params = {"R": np.zeros(3)}
        optimizer = Adam(params, learning_rate=0.01, shared_scale=shared)
        for _ in range(20):
            optimizer.step(params, {"R": gradient.copy()})
        moved[bool(shared)] = -params["R"]
    # one normaliser per entry: a faint steady gradient moves as far as a strong one
    np.testing.assert_allclose(np.abs(moved[False]), 0.2, rtol=1e-3)
    # shared: the strong entry still moves by the learning rate, the faint ones a thousandth of it
    assert moved[True][0] == pytest.approx(0.2, rel=1e-3)
    np.testing.assert_allclose(moved[True][1:], [2e-4, -2e-4], rtol=1e-3)
    # the copy map's distances, and the number path's counts of words and of characters, whose
    # faint drift spoiled runs
    assert {"R", "N_words", "N_tally"} <= SHARED_SCALE
