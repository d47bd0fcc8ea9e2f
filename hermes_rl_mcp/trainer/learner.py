"""One optimisation step of the policy on a batch of scored groups."""

from __future__ import annotations

import re
import time
from typing import Any, Sequence

import numpy as np

from hermes_rl_mcp.trainer.adam import Adam
from hermes_rl_mcp.trainer.exploration import ExploredTurns, RewardedAnswers
from hermes_rl_mcp.trainer.grpo import TokenBatch, clipped_objective, flatten_groups
from hermes_rl_mcp.trainer.model import STATISTICS, PolicyModel
from hermes_rl_mcp.trainer.numbers import NUMBER_RANGE, RewardedIntegers
from hermes_rl_mcp.trainer.settings import TrainerConfig
from hermes_rl_mcp.trainer.tokenizer import END, CharTokenizer

# Weight of the entropy-floor bonus per position, beside advantages of about 1 per sequence:
# enough to keep a position from becoming certain, too little to outweigh what scores teach.
ENTROPY_FLOOR_WEIGHT = 0.25
# A token the policy gives less than about 1/1000 is not pushed further down by a negative
# advantage. Pushing down a token of probability p moves every other token up in proportion to
# its own probability, so an answer the policy already rejects, when it scores badly, mostly
# makes the policy's favourite likelier still, whether or not that one is right for the prompt.
# With rare samples (exploration, a high temperature) those pushes add up: the favourite's lead
# grew to hundreds of nats and no input could overturn it. Samples that score well still teach.
UNLIKELY_LOGPROB = -7.0
# The one-hot inputs' embeddings (``W_in``) decay at this rate (decoupled, as in AdamW): a row no
# batch reaches fades toward zero rather than keeping its random start, and of inputs that explain
# the rewards alike, one shared by many prompts keeps its weight more cheaply than a row per value.
# Without it, a policy that had found a relation for held-out prompts lost it late in some runs
# to a per-value shortcut (``docs/design-notes.md``).
INPUT_DECAY = 1.0
# The copy map's weights per code distance (``R``) share one step size: with a normaliser per
# entry, a distance no sample called for but that every failed copy nudged (a failure's lost
# probability goes to every other token) moved as fast as one the rewards asked for, and in some
# runs the nudged distances overtook the identity together and every copy came out shifted. The
# number path's weights per counted word (``N_words``) and per counted character (``N_tally``)
# share one each too: a prompt's incidental words (names, items) and letters (a code's) each
# drift on noise at the full step otherwise, and a count that had settled came apart
# (``docs/design-notes.md``).
SHARED_SCALE = frozenset({"R", "N_words", "N_tally"})
INTEGER = re.compile(r"-?[0-9]+")
# The weights' average ramps its decay up as (1 + n) / (AVERAGE_RAMP + n) after n steps, to the
# configured one (``average_decay``): early on the policy moves fast and an average of old
# weights would lag it.
AVERAGE_RAMP = 10


class Learner:
    """The policy, its optimiser and (with a KL penalty) the frozen initial policy."""

    def __init__(
        self,
        model: PolicyModel,
        config: TrainerConfig,
        *,
        explored: ExploredTurns | None = None,
        rewarded: RewardedAnswers | None = None,
    ) -> None:
        self.model = model
        self.config = config
        self.explored = explored  # turns the policy server explored rather than sampled
        self.rewarded = rewarded  # answers that scored above their group, offered to other prompts
        self.optimizer = Adam(
            model.params, learning_rate=config.learning_rate, max_grad_norm=config.max_grad_norm,
            weight_decay={"W_in": INPUT_DECAY}, shared_scale=SHARED_SCALE,
        )
        self.reference = model.copy() if config.kl_coef > 0 else None
        # What evaluation and checkpoints serve: the weights averaged over the last steps. The
        # policy's RL steps are noisy (a batch's groups pull it about), so the average answers
        # held-out prompts better than the latest weights once learning levels off.
        self.average = model.copy()
        self.steps_averaged = 0

    def step(self, groups: Sequence[dict[str, Any]]) -> dict[str, float]:
        """Update the policy on ``groups``; returns the step's metrics."""
        started = time.perf_counter()
        cfg = self.config
        batch = flatten_groups(groups, tokenizer=self.model.tokenizer)
        metrics: dict[str, float] = {
            "reward/mean": float(np.mean(batch.scores)) if batch.scores else 0.0,
            "advantages/mean": float(np.mean(batch.sequence_advantages)) if batch.sequence_advantages else 0.0,
            "train/learning_rate": cfg.learning_rate,
            "train/num_sequences": float(batch.num_sequences),
            "train/num_tokens": float(len(batch.targets)),
        }
        if self.rewarded is not None:
            self.rewarded.add_from(batch)
        if self.explored is not None:
            self.explored.credit(batch)  # which kinds of exploration find this task's answers
            metrics["explore/boost"] = self.explored.boost()
        if batch.targets:
            metrics.update(self._optimise(batch))
        else:
            metrics["train/loss"] = 0.0
        self._fold_into_average()
        metrics["train/step_time"] = time.perf_counter() - started
        return metrics

    def _fold_into_average(self) -> None:
        decay = average_decay(self.config.average_decay, self.steps_averaged)
        self.steps_averaged += 1
        for name, value in self.model.params.items():
            kept = self.average.params[name]
            if name in STATISTICS:  # counts of what was trained on, not weights: the latest hold
                kept[...] = value
            else:
                kept *= decay
                kept += (1.0 - decay) * value

    def _optimise(self, batch: TokenBatch) -> dict[str, float]:
        """``passes_per_batch`` optimizer steps on one batch (PPO's epochs: the importance
        ratio against the sampling policy, clipped, bounds how far they move it). The inputs
        are built once; the metrics are the first pass's, plus the clip fraction of the last."""
        cfg = self.config
        targets = np.asarray(batch.targets, dtype=np.int64)
        feats = self.model.features(batch.prompts, batch.generated)
        self.model.observe(feats)
        allowed = batch.allowed_matrix(self.model.shape.vocab_size)
        behaviour = np.asarray(batch.behaviour_logprobs, dtype=np.float64)
        advantages = np.asarray(batch.advantages, dtype=np.float64)
        sequences = max(batch.num_sequences, 1)
        ref_logp = None
        if self.reference is not None:
            ref_logp, _ = self.reference.token_logprobs(feats, targets, cfg.temperature, allowed)
            ref_logp = ref_logp.astype(np.float64)
        rewarded = rewarded_integers(batch, feats.prompt_of, self.model.tokenizer, sequences)
        explored, forked = self._explored(batch)
        metrics: dict[str, float] = {}
        for done in range(cfg.passes_per_batch):
            logp, cache = self.model.token_logprobs(feats, targets, cfg.temperature, allowed)
            shielded = shielded_positions(logp, explored)
            result = clipped_objective(
                logp.astype(np.float64),
                behaviour,
                advantages,
                clip_epsilon=cfg.clip_epsilon,
                normalizer=sequences,
                ref_logp=ref_logp,
                kl_coef=cfg.kl_coef,
                shielded=shielded,
                demonstrated=forked,
            )
            entropy_weight = None
            if cfg.entropy_coef > 0:  # maximising entropy = minimising -coef * H
                entropy_weight = np.full(len(targets), -cfg.entropy_coef / sequences, dtype=self.model.dtype)
            if cfg.entropy_floor > 0:
                below = below_entropy_floor(cache.probs, advantages, cfg.entropy_floor)
                bonus = np.where(below, -ENTROPY_FLOOR_WEIGHT / sequences, 0.0).astype(self.model.dtype)
                entropy_weight = bonus if entropy_weight is None else entropy_weight + bonus
            grads = self.model.backward(cache, targets, result.dlogp.astype(self.model.dtype), entropy_weight, rewarded)
            grad_norm = self.optimizer.step(self.model.params, grads, self.model.step_scales(feats))
            if done == 0:
                metrics = {
                    "train/loss": result.loss,
                    "train/grad_norm": grad_norm,
                    "train/ratio_mean": result.ratio_mean,
                    "train/clip_fraction": result.clip_fraction,
                    "train/entropy": _mean_entropy(cache.probs),
                }
                if cfg.entropy_floor > 0:
                    metrics["train/below_entropy_floor"] = float(below.mean())
                if self.reference is not None:
                    metrics["train/kl"] = result.kl
            elif done == cfg.passes_per_batch - 1:
                metrics["train/clip_fraction_last_pass"] = result.clip_fraction
        return metrics

    def _explored(self, batch: TokenBatch) -> tuple[np.ndarray, np.ndarray]:
        """The positions of turns the policy server explored rather than sampled, and of those
        it forked (see ``exploration``)."""
        if self.explored is None or not len(self.explored):
            none = np.zeros(len(batch.targets), dtype=bool)
            return none, none
        kinds = [self.explored.kind(*turn) for turn in batch.turns]
        turn_of = np.asarray(batch.turn_of, dtype=np.int64)
        explored = np.asarray([kind is not None for kind in kinds], dtype=bool)
        forked = np.asarray([kind == "fork" for kind in kinds], dtype=bool)
        return explored[turn_of], forked[turn_of]


def shielded_positions(logp: np.ndarray, explored: np.ndarray) -> np.ndarray:
    """Positions a negative advantage must not push down: tokens the policy already rejects,
    and every token of a turn the policy server explored."""
    return (logp < UNLIKELY_LOGPROB) | explored


def average_decay(decay: float, steps_averaged: int) -> float:
    """The decay of the weights' average at its next step: ``decay``, lowered over the first
    steps (``AVERAGE_RAMP``) so the average does not hold on to the weights a run started from
    (0 keeps only the latest weights)."""
    return min(decay, (1 + steps_averaged) / (AVERAGE_RAMP + steps_averaged))


def rewarded_integers(batch: TokenBatch, prompt_of: np.ndarray, tokenizer: CharTokenizer, normalizer: int) -> RewardedIntegers:
    """The batch's turns that are a whole integer the number path can spell and whose sequence
    scored above its group, each weighted by its advantage as a sample's log-likelihood is.

    The number path's value is regressed on these (``PolicyModel.backward``), whichever part of
    the policy wrote them, besides the policy gradient each of their tokens gets. Replies that
    scored below their group add nothing: a wrong answer says where the value is not, not where
    it is, and the path's samples near a wrong value already teach it through their tokens."""
    prompts, values, weights = [], [], []
    for turn, row, advantage in batch.turn_starts():
        text = tokenizer.decode([token for token in batch.turns[turn][1] if token != END])
        if advantage > 0 and INTEGER.fullmatch(text) and abs(int(text)) <= NUMBER_RANGE:
            prompts.append(int(prompt_of[row]))
            values.append(float(int(text)))
            weights.append(-advantage / normalizer)
    return RewardedIntegers(np.asarray(prompts, dtype=np.int64), np.asarray(values), np.asarray(weights))


def below_entropy_floor(probs: np.ndarray, advantages: np.ndarray, floor: float) -> np.ndarray:
    """The positions that get the entropy-floor bonus: those about to become certain, in a
    sequence that scored at or below its group's mean.

    Once a policy is sure of one answer for every prompt, groups score alike and their
    advantages are zero, so nothing would teach it the answers it stopped trying; the bonus
    keeps a position it is growing sure of, wrongly, from becoming certain. A sequence that
    scored above its group gets none: there the bonus would only loosen an answer learned."""
    return (_entropies(probs) < floor) & (advantages <= 0)


def _mean_entropy(probs: np.ndarray) -> float:
    return float(_entropies(probs).mean())


def _entropies(probs: np.ndarray) -> np.ndarray:
    """Each row's entropy in nats."""
    with np.errstate(divide="ignore", invalid="ignore"):
        terms = np.where(probs > 0, probs * np.log(np.where(probs > 0, probs, 1.0)), 0.0)
    return -terms.sum(axis=1)
