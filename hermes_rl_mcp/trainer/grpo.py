"""Group-relative advantages and the clipped importance-sampling policy-gradient objective.

A batch arrives as scored groups: ``tokens``, ``masks`` (-100 on prompt positions, else the token
id) and ``inference_logprobs`` (the behaviour policy's logprobs, aligned to ``tokens``). Every
position whose mask is not -100 is a generated token the loss trains on. Each maximal run of such
positions is one assistant turn: its prompt is everything before the run, which is exactly the
context the policy server generated it from (multi-turn conversations have several runs).
A group generated under a ``guided_choice`` constraint says so in ``generation_params``; each of
its turns is then scored under the same mask the policy server sampled with.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Sequence

import numpy as np

from hermes_rl_mcp.errors import HermesRLError
from hermes_rl_mcp.sdk.env_types import PROMPT_MASK
from hermes_rl_mcp.trainer.constraints import ConstraintError, constraint_from_params
from hermes_rl_mcp.trainer.tokenizer import CharTokenizer


# Dual-clip PPO's bound on a negative advantage's importance ratio (Ye et al., 2020, use 3).
DUAL_CLIP = 3.0


def group_advantages(scores: Sequence[float], *, normalize: bool = True, eps: float = 1e-6) -> np.ndarray:
    """Each score minus the group mean, divided by the group's standard deviation when
    ``normalize``; a group whose scores are all equal gets zero advantages."""
    values = np.asarray(scores, dtype=np.float64)
    if values.size == 0:
        return values
    centred = values - values.mean()
    if not normalize:
        return centred
    std = values.std()
    return centred / (std + eps) if std > eps else np.zeros_like(values)


@dataclass
class TokenBatch:
    """The trained-on positions of a batch, flattened."""

    prompts: list[list[int]] = field(default_factory=list)  # per position: the turn's prompt
    generated: list[list[int]] = field(default_factory=list)  # per position: the turn's earlier tokens
    targets: list[int] = field(default_factory=list)
    behaviour_logprobs: list[float] = field(default_factory=list)  # NaN when the sender gave none
    advantages: list[float] = field(default_factory=list)
    sequence_index: list[int] = field(default_factory=list)
    num_sequences: int = 0
    scores: list[float] = field(default_factory=list)  # one per sequence
    sequence_advantages: list[float] = field(default_factory=list)  # one per sequence
    allowed: list[np.ndarray | None] = field(default_factory=list)  # per position: constrained-decoding mask
    turn_of: list[int] = field(default_factory=list)  # per position: its turn in ``turns``
    turns: list[tuple[tuple[int, ...], tuple[int, ...]]] = field(default_factory=list)  # (prompt, turn tokens)

    def turn_starts(self) -> list[tuple[int, int, float]]:
        """Each turn once: its index in ``turns``, the first position trained on in it, and its
        sequence's advantage."""
        rows: dict[int, int] = {}
        for row, turn in enumerate(self.turn_of):
            rows.setdefault(turn, row)
        return [(turn, row, self.sequence_advantages[self.sequence_index[row]]) for turn, row in rows.items()]

    def allowed_matrix(self, vocab_size: int) -> np.ndarray | None:
        """(positions, V) masks, all-true where unconstrained; None when no position is constrained."""
        if all(mask is None for mask in self.allowed):
            return None
        out = np.ones((len(self.allowed), vocab_size), dtype=bool)
        for row, mask in enumerate(self.allowed):
            if mask is not None:
                out[row] = mask
        return out


class BatchError(HermesRLError, ValueError):
    """A scored group that cannot be trained on; the message says which field is wrong."""


def flatten_groups(
    groups: Sequence[dict[str, Any]], *, normalize_advantages: bool = True, tokenizer: CharTokenizer | None = None
) -> TokenBatch:
    """The positions to train on, with per-token advantages and behaviour logprobs.

    Advantages come from the group's ``advantages`` when it sends them (one per sequence or one
    per token), otherwise from its ``scores``, group-relative. With ``tokenizer``, constrained
    groups get their per-position masks.
    """
    batch = TokenBatch()
    for g_index, group in enumerate(groups):
        tokens = group.get("tokens")
        masks = group.get("masks")
        scores = group.get("scores")
        if not isinstance(tokens, list) or not isinstance(masks, list) or not isinstance(scores, list):
            raise BatchError(f"group {g_index} needs lists 'tokens', 'masks' and 'scores'")
        if not (len(tokens) == len(masks) == len(scores)):
            raise BatchError(
                f"group {g_index}: {len(tokens)} token lists, {len(masks)} mask lists, {len(scores)} scores; they must match"
            )
        inference = group.get("inference_logprobs") or [None] * len(tokens)
        constraint = None
        if tokenizer is not None:
            try:
                constraint = constraint_from_params(group.get("generation_params"), tokenizer)
            except ConstraintError as exc:
                raise BatchError(f"group {g_index}: {exc}") from exc
        given_adv = group.get("advantages")
        seq_adv = group_advantages(scores, normalize=normalize_advantages)
        for s_index, (seq, mask) in enumerate(zip(tokens, masks)):
            if len(seq) != len(mask):
                raise BatchError(f"group {g_index} sequence {s_index}: {len(seq)} tokens but {len(mask)} masks")
            behaviour = inference[s_index] if s_index < len(inference) else None
            if behaviour is not None and len(behaviour) != len(seq):
                behaviour = None  # misaligned logprobs are not usable; train on-policy for it
            per_token_adv = _given_advantages(given_adv, s_index, len(seq))
            seq_number = batch.num_sequences
            batch.num_sequences += 1
            batch.scores.append(float(scores[s_index]))
            batch.sequence_advantages.append(float(seq_adv[s_index]))
            turn_start = -1
            for pos, m in enumerate(mask):
                if m == PROMPT_MASK:
                    turn_start = -1
                    continue
                if pos == 0:
                    continue  # nothing to condition on
                if turn_start < 0:
                    turn_start = pos
                    turn_end = next((k for k in range(pos, len(mask)) if mask[k] == PROMPT_MASK), len(mask))
                    batch.turns.append((tuple(seq[:turn_start]), tuple(seq[turn_start:turn_end])))
                batch.turn_of.append(len(batch.turns) - 1)
                batch.prompts.append(seq[:turn_start])
                batch.generated.append(seq[turn_start:pos])
                allowed = None
                if constraint is not None:
                    allowed = constraint.allowed(seq[turn_start:pos])
                    if allowed is None or not allowed[seq[pos]]:
                        raise BatchError(
                            f"group {g_index} sequence {s_index}: token {pos} leaves the group's guided_choice "
                            "(the completion is none of the allowed strings)"
                        )
                batch.allowed.append(allowed)
                batch.targets.append(int(seq[pos]))
                lp = behaviour[pos] if behaviour is not None else None
                usable = isinstance(lp, (int, float)) and math.isfinite(lp) and lp <= 0
                batch.behaviour_logprobs.append(float(lp) if usable else math.nan)
                adv = per_token_adv[pos] if per_token_adv is not None else seq_adv[s_index]
                batch.advantages.append(float(adv))
                batch.sequence_index.append(seq_number)
    return batch


def _given_advantages(given: Any, s_index: int, length: int) -> list[float] | None:
    if not isinstance(given, list) or s_index >= len(given):
        return None
    entry = given[s_index]
    if isinstance(entry, (int, float)):
        return [float(entry)] * length
    if isinstance(entry, list) and len(entry) == length:
        return [float(x) for x in entry]
    return None


@dataclass
class ObjectiveResult:
    loss: float
    dlogp: np.ndarray  # d loss / d log pi(token), per position
    ratio_mean: float
    clip_fraction: float
    kl: float


def clipped_objective(
    logp: np.ndarray,
    behaviour_logp: np.ndarray,
    advantages: np.ndarray,
    *,
    clip_epsilon: float,
    normalizer: float,
    ref_logp: np.ndarray | None = None,
    kl_coef: float = 0.0,
    shielded: np.ndarray | None = None,
    demonstrated: np.ndarray | None = None,
) -> ObjectiveResult:
    """PPO-clip loss over token positions and its gradient with respect to ``logp``.

    The ratio pi/mu uses the behaviour logprobs the rollouts were sampled with, so batches
    generated by an older policy are importance-corrected; where a logprob is missing (NaN) the
    position is treated as on-policy (ratio 1). Per token the objective is
    ``min(r * A, clip(r, 1 - eps, 1 + eps) * A)``; the loss is minus its sum divided by
    ``normalizer`` (the number of sequences), plus ``kl_coef`` times the k3 estimate of
    KL(pi || ref) on the same tokens when a reference is given.

    Where ``A < 0`` the objective is also bounded below by ``DUAL_CLIP * A`` (dual-clip PPO):
    a token the sampler found unlikely that the policy has since come to favour would otherwise
    be pushed down with weight ``r``, which reaches thousands when rollouts lag the policy.

    Positions where ``shielded`` is true get no gradient from a negative advantage (the
    learner shields tokens the policy already rejects, and samples it did not choose).

    Positions where ``demonstrated`` is true and the advantage is positive are pushed up by the
    whole advantage whatever their ratio, as a demonstration is learnt: the learner marks the
    replies the policy server forked (``exploration._forked``, ``_word_forked``). A fork's
    changed token starts far below the policy's choice (1 in 100,000), the clip would let one
    step raise it by a fifth at most, and the fork that found it seldom comes again.
    """
    old = np.where(np.isnan(behaviour_logp), logp, behaviour_logp)
    log_ratio = np.clip(logp - old, -20.0, 20.0)
    ratio = np.exp(log_ratio)
    unclipped = ratio * advantages
    clipped = np.clip(ratio, 1.0 - clip_epsilon, 1.0 + clip_epsilon) * advantages
    objective = np.minimum(unclipped, clipped)
    floor = DUAL_CLIP * advantages
    bounded = (advantages < 0) & (objective < floor)
    objective = np.where(bounded, floor, objective)
    # The gradient flows only where the unclipped term is the minimum and above the floor.
    active = (unclipped <= clipped) & ~bounded
    if shielded is not None:
        active &= (advantages >= 0) | ~shielded
    dlogp = np.where(active, -unclipped, 0.0) / normalizer
    if demonstrated is not None:
        # learnt as a demonstration: the whole advantage, whatever the ratio has become
        dlogp = np.where(demonstrated & (advantages > 0), -advantages / normalizer, dlogp)
    loss = -objective.sum() / normalizer
    kl_mean = 0.0
    if ref_logp is not None and kl_coef > 0:
        diff = np.clip(ref_logp - logp, -20.0, 20.0)
        kl = np.exp(diff) - diff - 1.0
        loss += kl_coef * kl.sum() / normalizer
        dlogp = dlogp + kl_coef * (1.0 - np.exp(diff)) / normalizer
        kl_mean = float(kl.mean()) if kl.size else 0.0
    changed = np.abs(ratio - np.clip(ratio, 1.0 - clip_epsilon, 1.0 + clip_epsilon)) > 0
    return ObjectiveResult(
        loss=float(loss),
        dlogp=dlogp,
        ratio_mean=float(ratio.mean()) if ratio.size else 1.0,
        clip_fraction=float(changed.mean()) if ratio.size else 0.0,
        kl=kl_mean,
    )
