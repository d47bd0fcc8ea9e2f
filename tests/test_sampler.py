"""The model-guided item sampler."""

from __future__ import annotations

import random
from collections import Counter

import pytest

from hermes_rl_mcp.sdk.sampler import ItemSampler

GROUP = 8


def simulate(sampler: ItemSampler, pass_rates: list[float], picks: int, seed: int = 0) -> Counter[int]:
    """Pick ``picks`` items, each answered by a group whose members pass with the item's rate."""
    rng = random.Random(seed)
    counts: Counter[int] = Counter()
    for _ in range(picks):
        index = sampler.next_index()
        counts[index] += 1
        sampler.observe(index, [1.0 if rng.random() < pass_rates[index] else 0.0 for _ in range(GROUP)])
    return counts


def test_prefers_items_with_intermediate_pass_rates() -> None:
    # items 0-9 always solved, 10-19 never solved, 20-29 solved half the time
    rates = [1.0] * 10 + [0.0] * 10 + [0.5] * 10
    counts = simulate(ItemSampler(30, group_size=GROUP, exploration_rate=0.1, seed=1), rates, 3000)
    solved, unsolved, frontier = (sum(counts[i] for i in range(k, k + 10)) for k in (0, 10, 20))
    assert frontier > 0.6 * 3000
    assert frontier > 5 * solved
    # never-solved items are revisited more than solved ones as their evidence fades (what the
    # policy fails is where accuracy is to be gained), but far less than the frontier
    assert solved < unsolved < frontier / 2


def test_among_informative_items_the_mostly_failed_ones_come_first() -> None:
    # a group differs as often at pass rate 0.2 as at 0.8; the 0.2 items have more to learn
    rates = [0.2] * 10 + [0.8] * 10
    counts = simulate(ItemSampler(20, group_size=GROUP, exploration_rate=0.1, seed=7), rates, 3000)
    mostly_failed, mostly_passed = (sum(counts[i] for i in range(k, k + 10)) for k in (0, 10))
    assert mostly_failed > 1.5 * mostly_passed


def test_guided_groups_differ_more_often_than_uniform_ones() -> None:
    rates = [1.0] * 40 + [0.0] * 40 + [0.3, 0.5, 0.7, 0.9] * 5

    def informative_share(exploration_rate: float) -> float:
        sampler = ItemSampler(len(rates), group_size=GROUP, exploration_rate=exploration_rate, seed=2)
        rng = random.Random(3)
        informative = 0
        for _ in range(2000):
            index = sampler.next_index()
            scores = [1.0 if rng.random() < rates[index] else 0.0 for _ in range(GROUP)]
            sampler.observe(index, scores)
            informative += len(set(scores)) > 1
        return informative / 2000

    guided, uniform = informative_share(0.1), informative_share(1.0)
    assert uniform < 0.25  # a fifth of the items can differ at all
    # dead items are revisited as their evidence fades (the policy may have changed), so the
    # guided share stays well below 1, but far above uniform
    assert guided > 2 * uniform


def test_exploration_rate_one_is_uniform_whatever_the_scores() -> None:
    rates = [1.0] * 10 + [0.5] * 10
    counts = simulate(ItemSampler(20, group_size=GROUP, exploration_rate=1.0, seed=4), rates, 8_000)
    expected = 8_000 / 20
    # each item within 4 standard deviations of a binomial count
    sigma = (8_000 * (1 / 20) * (19 / 20)) ** 0.5
    assert all(abs(counts[i] - expected) < 4 * sigma for i in range(20)), counts
    # the half-solved items are not preferred
    assert abs(sum(counts[i] for i in range(10, 20)) - 4_000) < 4 * (8_000 * 0.25) ** 0.5


def test_no_item_is_starved() -> None:
    rates = [0.5] + [1.0] * 49
    counts = simulate(ItemSampler(50, group_size=GROUP, exploration_rate=0.1, seed=5), rates, 3000)
    assert len(counts) == 50  # every item drawn at least once
    assert counts[0] > 1000


def test_stale_evidence_fades_so_a_learned_item_is_revisited() -> None:
    sampler = ItemSampler(10, group_size=GROUP, exploration_rate=0.0, seed=6)
    for index in range(10):
        sampler.observe(index, [0.0] * GROUP)  # nothing solved yet
    for _ in range(3):
        sampler.observe(3, [1.0, 0.0] * (GROUP // 2))  # item 3 becomes half solved
    signal = sampler.signal_probability()
    assert signal.argmax() == 3 and signal[3] > 0.9
    # the latest groups outweigh older ones: item 3 is now always solved
    sampler.observe(3, [1.0] * GROUP)
    sampler.observe(3, [1.0] * GROUP)
    assert sampler.signal_probability()[3] < 0.8 * signal[3]
    # while the rest of the pool turns half solved, item 0 (failed once, long ago) drifts back to
    # the shared prior instead of being written off
    before = sampler.signal_probability()[0]
    for _ in range(200):
        sampler.next_index()
        sampler.observe(5, [1.0, 0.0] * (GROUP // 2))
    assert sampler.signal_probability()[0] > before + 0.2


def test_same_seed_same_picks() -> None:
    def picks(seed: int) -> list[int]:
        sampler = ItemSampler(100, group_size=4, exploration_rate=0.2, seed=seed)
        out = []
        for step in range(300):
            index = sampler.next_index()
            out.append(index)
            sampler.observe(index, [float((index + step + k) % 3 == 0) for k in range(4)])
        return out

    assert picks(7) == picks(7)
    assert picks(7) != picks(8)


def test_bad_arguments_are_refused() -> None:
    with pytest.raises(ValueError, match="exploration_rate"):
        ItemSampler(10, group_size=4, exploration_rate=1.5)
    with pytest.raises(ValueError, match="num_items"):
        ItemSampler(0, group_size=4, exploration_rate=0.1)


def test_equal_score_groups_are_dropped_until_the_trainer_would_starve() -> None:
    from hermes_rl_mcp.sdk.runtime import EqualScoreFilter

    gate = EqualScoreFilter(limit=3)
    assert gate.admit([0.0, 1.0])
    assert [gate.admit([1.0, 1.0]) for _ in range(5)] == [False, False, False, True, True]
    assert gate.admit([0.5, 1.0]) and not gate.admit([1.0, 1.0])  # a differing group resets the streak
