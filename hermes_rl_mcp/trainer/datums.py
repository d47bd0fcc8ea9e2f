"""Scored groups as the per-token arrays a Tinker learner trains on.

A scored group holds, per sequence, ``tokens``, ``masks`` (-100 on prompt positions, the token
id where the policy generated it) and ``inference_logprobs`` (the behaviour policy's logprob of
each token, aligned to ``tokens``). Tinker trains next-token prediction: the model reads
``tokens[:-1]`` and is scored on ``tokens[1:]``, so every per-token array here is aligned to the
targets (suffix ``_T``: one entry per target position). Generated targets carry their
sequence's group-relative advantage and their sampling logprob; prompt targets carry advantage
0, so the importance-sampling loss ``-exp(logp - sampling_logp) * advantage`` ignores them.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Sequence

from hermes_rl_mcp.sdk.env_types import PROMPT_MASK
from hermes_rl_mcp.trainer.grpo import BatchError, group_advantages


@dataclass(frozen=True)
class TrainingSequence:
    input_tokens_T: list[int]
    target_tokens_T: list[int]
    sampling_logprobs_T: list[float]
    advantages_T: list[float]
    trained_T: list[bool]  # generated targets with a usable sampling logprob: the ones the loss sees
    score: float
    advantage: float
    missing_logprobs: int  # generated targets the sender gave no logprob for (left out of the loss)


def training_sequences(groups: Sequence[dict[str, Any]], *, normalize_advantages: bool = True) -> list[TrainingSequence]:
    """One TrainingSequence per completion in ``groups``; raises BatchError on a malformed group."""
    sequences: list[TrainingSequence] = []
    for g_index, group in enumerate(groups):
        tokens_G, masks_G, scores_G = group.get("tokens"), group.get("masks"), group.get("scores")
        if not isinstance(tokens_G, list) or not isinstance(masks_G, list) or not isinstance(scores_G, list):
            raise BatchError(f"group {g_index} needs lists 'tokens', 'masks' and 'scores'")
        if not len(tokens_G) == len(masks_G) == len(scores_G):
            raise BatchError(f"group {g_index}: {len(tokens_G)} token lists, {len(masks_G)} mask lists, {len(scores_G)} scores")
        logprobs_G = group.get("inference_logprobs") or [None] * len(tokens_G)
        advantages_G = group_advantages(scores_G, normalize=normalize_advantages)
        for s_index, (tokens, masks) in enumerate(zip(tokens_G, masks_G)):
            if len(tokens) != len(masks):
                raise BatchError(f"group {g_index} sequence {s_index}: {len(tokens)} tokens but {len(masks)} masks")
            if len(tokens) < 2:
                raise BatchError(f"group {g_index} sequence {s_index}: fewer than two tokens, nothing to predict")
            logprobs = logprobs_G[s_index] if s_index < len(logprobs_G) else None
            if logprobs is not None and len(logprobs) != len(tokens):
                raise BatchError(
                    f"group {g_index} sequence {s_index}: {len(logprobs)} inference_logprobs for {len(tokens)} tokens"
                )
            advantage = float(advantages_G[s_index])
            sampling_T: list[float] = []
            advantages_T: list[float] = []
            trained_T: list[bool] = []
            missing = 0
            for pos in range(1, len(tokens)):
                generated = masks[pos] != PROMPT_MASK
                value = logprobs[pos] if logprobs is not None else None
                usable = isinstance(value, (int, float)) and math.isfinite(value) and value <= 0
                trained_T.append(generated and usable)
                if generated and usable:
                    sampling_T.append(float(value))
                    advantages_T.append(advantage)
                else:
                    # Without the logprob it was sampled with, a token's importance ratio is
                    # unknown: it is left out of the loss rather than guessed on-policy.
                    missing += int(generated)
                    sampling_T.append(0.0)
                    advantages_T.append(0.0)
            sequences.append(
                TrainingSequence(
                    input_tokens_T=[int(t) for t in tokens[:-1]],
                    target_tokens_T=[int(t) for t in tokens[1:]],
                    sampling_logprobs_T=sampling_T,
                    advantages_T=advantages_T,
                    trained_T=trained_T,
                    score=float(scores_G[s_index]),
                    advantage=advantage,
                    missing_logprobs=missing,
                )
            )
    return sequences


def importance_sampling_loss(sequences: Sequence[TrainingSequence], new_logprobs: Sequence[Sequence[float]]) -> tuple[float, float]:
    """The loss Tinker documents, summed over tokens and averaged over sequences, and the mean
    importance ratio over trained tokens, from the learner's per-token logprobs.

    Engines that return no loss metric (SkyRL tx) still return these logprobs, so the loss is
    computed the same way on every engine.
    """
    total = 0.0
    ratios: list[float] = []
    for sequence, logprobs_T in zip(sequences, new_logprobs):
        for trained, sampling, advantage, logprob in zip(
            sequence.trained_T, sequence.sampling_logprobs_T, sequence.advantages_T, logprobs_T
        ):
            if not trained:
                continue
            ratio = math.exp(max(min(float(logprob) - sampling, 20.0), -20.0))
            total -= ratio * advantage
            ratios.append(ratio)
    loss = total / max(len(sequences), 1)
    return loss, (sum(ratios) / len(ratios) if ratios else 1.0)
