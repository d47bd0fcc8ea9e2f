"""Scored groups to Tinker datums: alignment, masks, advantages, sampling logprobs, the loss."""

from __future__ import annotations

import math

import pytest

from hermes_rl_mcp.trainer.datums import importance_sampling_loss, training_sequences
from hermes_rl_mcp.trainer.grpo import PROMPT_MASK, BatchError

P = PROMPT_MASK


def group(scores, sequences):
    """sequences: (tokens, number of prompt tokens, completion logprobs) per completion."""
    tokens, masks, logprobs = [], [], []
    for seq, prompt_len, completion_lps in sequences:
        tokens.append(seq)
        masks.append([P] * prompt_len + seq[prompt_len:])
        logprobs.append([1.0] * prompt_len + completion_lps)  # the SDK's placeholder on prompt positions
    return {"tokens": tokens, "masks": masks, "inference_logprobs": logprobs, "scores": scores}


def test_targets_are_the_next_tokens_with_advantages_only_on_the_completion() -> None:
    batch = [group([1.0, 0.0], [([5, 6, 7, 8], 2, [-0.5, -0.25]), ([5, 6, 9, 9], 2, [-1.0, -2.0])])]
    first, second = training_sequences(batch)
    assert first.input_tokens_T == [5, 6, 7] and first.target_tokens_T == [6, 7, 8]
    # target 6 is a prompt token; 7 and 8 were generated with logprobs -0.5 and -0.25
    assert first.trained_T == [False, True, True]
    assert first.sampling_logprobs_T == [0.0, -0.5, -0.25]
    assert first.advantages_T[0] == 0.0 and first.advantages_T[1:] == [pytest.approx(1.0, rel=1e-4)] * 2
    assert second.advantages_T[1:] == [pytest.approx(-1.0, rel=1e-4)] * 2  # group-relative, normalised
    assert first.score == 1.0 and second.score == 0.0


def test_equal_scores_give_zero_advantages_and_multi_turn_masks_train_every_turn() -> None:
    (seq,) = training_sequences([group([0.5], [([1, 2, 3, 4, 5], 1, [-0.1, -0.1, -0.1, -0.1])])])
    assert seq.advantages_T == [0.0] * 4
    turns = {"tokens": [[1, 2, 3, 4, 5, 6]], "masks": [[P, 2, P, P, 5, 6]], "scores": [1.0],
             "inference_logprobs": [[1.0, -0.1, 1.0, 1.0, -0.2, -0.3]]}
    multi, _ = training_sequences([turns, group([0.0], [([1, 2], 1, [-1.0])])])
    assert multi.trained_T == [True, False, False, True, True]


def test_positions_without_a_sampling_logprob_are_left_out_and_counted() -> None:
    data = group([1.0, 0.0], [([1, 2, 3], 1, [-0.1, -0.1]), ([1, 2, 4], 1, [-0.1, -0.1])])
    data["inference_logprobs"][0][2] = None
    first, _ = training_sequences([data])
    assert first.trained_T == [True, False] and first.missing_logprobs == 1 and first.advantages_T[1] == 0.0
    del data["inference_logprobs"]
    assert all(s.missing_logprobs == 2 for s in training_sequences([data]))


@pytest.mark.parametrize(
    "broken, message",
    [
        ({"tokens": [[1, 2]], "masks": [[P, 2]]}, "needs lists"),
        ({"tokens": [[1, 2]], "masks": [[P, 2]], "scores": [1.0, 0.0]}, "scores"),
        ({"tokens": [[1, 2]], "masks": [[P]], "scores": [1.0]}, "masks"),
        ({"tokens": [[1]], "masks": [[1]], "scores": [1.0]}, "fewer than two"),
        ({"tokens": [[1, 2]], "masks": [[P, 2]], "scores": [1.0], "inference_logprobs": [[-1.0]]}, "inference_logprobs"),
    ],
)
def test_malformed_groups_are_refused_with_the_field_named(broken: dict, message: str) -> None:
    with pytest.raises(BatchError, match=message):
        training_sequences([broken])


def test_the_loss_is_minus_ratio_times_advantage_summed_per_sequence_and_averaged() -> None:
    sequences = training_sequences([group([1.0, 0.0], [([1, 2, 3], 1, [-1.0, -1.0]), ([1, 2, 4], 1, [-1.0, -1.0])])])
    assert all(s.trained_T == [True, True] for s in sequences)  # both targets were generated
    on_policy = [[-1.0, -1.0], [-1.0, -1.0]]
    loss, ratio = importance_sampling_loss(sequences, on_policy)
    assert ratio == pytest.approx(1.0) and loss == pytest.approx(0.0, abs=1e-4)  # advantages +1 and -1 cancel
    shifted = [[-0.5, -0.5], [-1.0, -1.0]]  # the rewarded completion became likelier
    loss, ratio = importance_sampling_loss(sequences, shifted)
    expected = -(2 * math.exp(0.5) * 1.0 + 2 * 1.0 * -1.0) / 2
    assert loss == pytest.approx(expected, rel=1e-3) and ratio > 1.0
