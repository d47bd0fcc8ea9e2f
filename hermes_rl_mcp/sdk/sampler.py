"""Which training item to ask the policy about next.

Only a group whose scores differ carries a learning signal: group-relative advantages of a group
that is all right or all wrong are zero, and the runtime drops such groups. The model-guided
sampler keeps a Beta posterior of each item's pass rate (from the environment's right/wrong
verdict per rollout, or a score in [0, 1] counted as that much success), shrunk towards a prior
shared across items whose mean follows the recent pass rate of the whole pool. From it follows
each item's expected chance that its next group of ``group_size`` has differing scores,
E[1 - p**n - (1 - p)**n]. That chance is symmetric in p and 1 - p, but the two sides are not
worth the same: an item the policy mostly passes likely has its greedy answer right already,
while an item it mostly fails is where accuracy is still to be gained. So an item's priority is
that chance times twice its expected failure rate, 2 E[1 - p], and items are drawn with
probability proportional to exp(priority / selection_temperature): the frontier items dominate
without one item hogging every pick. (How this choice was arrived at: docs/design-notes.md.)

The policy keeps changing, so evidence goes stale: each new group halves the weight of an item's
older observations, and evidence also fades with the number of picks since the item was last
seen (half-life of one pass over the pool), so a long-unseen item drifts back to the shared prior.
``exploration_rate`` of the picks are uniform, so no item is starved; 1 gives plain uniform
sampling.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np


class ItemSampler:
    def __init__(
        self,
        num_items: int,
        *,
        group_size: int,
        exploration_rate: float,
        seed: int = 0,
        prior_strength: float = 2.0,
        observation_decay: float = 0.5,
        half_life: float | None = None,
        selection_temperature: float = 0.2,
    ) -> None:
        if num_items < 1:
            raise ValueError(f"num_items must be at least 1, got {num_items}")
        if not 0.0 <= exploration_rate <= 1.0:
            raise ValueError(f"exploration_rate must be in [0, 1], got {exploration_rate}")
        if group_size < 1:
            raise ValueError(f"group_size must be at least 1, got {group_size}")
        self.num_items = num_items
        self.group_size = group_size
        self.exploration_rate = exploration_rate
        self.prior_strength = prior_strength
        self.observation_decay = observation_decay
        self.half_life = float(half_life if half_life is not None else max(2 * num_items, 64))
        self.selection_temperature = selection_temperature
        self._rng = np.random.default_rng(seed)
        self._successes = np.zeros(num_items)
        self._failures = np.zeros(num_items)
        self._last_seen = np.zeros(num_items)
        self._picks = 0
        self._pool_mean = 0.5  # shared prior mean; follows the recent mean score

    @property
    def uniform(self) -> bool:
        return self.exploration_rate >= 1.0

    def _freshness(self) -> np.ndarray:
        return np.power(0.5, (self._picks - self._last_seen) / self.half_life)

    def posterior(self) -> tuple[np.ndarray, np.ndarray]:
        """Beta parameters (alpha, beta) of every item's pass rate, as of now."""
        fresh = self._freshness()
        mean = min(max(self._pool_mean, 0.02), 0.98)
        alpha = self.prior_strength * mean + fresh * self._successes
        beta = self.prior_strength * (1.0 - mean) + fresh * self._failures
        return alpha, beta

    def signal_probability(self) -> np.ndarray:
        """Posterior expectation of P(a group of group_size has differing scores), per item."""
        alpha, beta = self.posterior()
        all_pass = np.ones(self.num_items)
        all_fail = np.ones(self.num_items)
        for k in range(self.group_size):
            all_pass *= (alpha + k) / (alpha + beta + k)
            all_fail *= (beta + k) / (alpha + beta + k)
        return 1.0 - all_pass - all_fail

    def priority(self) -> np.ndarray:
        """What guided picks favour: the chance of a differing group times 2 E[1 - pass rate]."""
        alpha, beta = self.posterior()
        return self.signal_probability() * 2.0 * beta / (alpha + beta)  # 2x: equal to the chance at p = 0.5

    def next_index(self) -> int:
        self._picks += 1
        if self.uniform or self._rng.random() < self.exploration_rate:
            return int(self._rng.integers(self.num_items))
        # Gumbel-max: an exact draw from softmax(priority / temperature)
        gumbel = self._rng.gumbel(size=self.num_items)
        return int(np.argmax(self.priority() / self.selection_temperature + gumbel))

    def observe(self, index: int, scores: Sequence[float], passes: Sequence[bool] | None = None) -> None:
        """Record the group generated for item ``index``.

        Without ``passes``, a score clipped to [0, 1] counts as that much success, and a group
        of equal scores counts as all passed (>= 0.5) or all failed, so an item that always earns
        the same partial score is not mistaken for one with a middling pass rate. ``passes``
        (the environment's right/wrong per rollout) replaces the scores as evidence.
        """
        if not scores:
            return
        if passes is not None:
            evidence = np.asarray([1.0 if p else 0.0 for p in passes])
        else:
            evidence = np.clip(np.asarray(scores, dtype=float), 0.0, 1.0)
            if len(evidence) > 1 and np.ptp(evidence) < 1e-9:
                # A constant group says the item yields no signal, whatever the partial score
                # was: record it as all passed or all failed, not as a middling pass rate.
                evidence = np.full(len(evidence), 1.0 if evidence[0] >= 0.5 else 0.0)
        fresh = float(self._freshness()[index]) * self.observation_decay
        self._successes[index] = fresh * self._successes[index] + evidence.sum()
        self._failures[index] = fresh * self._failures[index] + (len(evidence) - evidence.sum())
        self._last_seen[index] = self._picks
        self._pool_mean = 0.9 * self._pool_mean + 0.1 * float(evidence.mean())
