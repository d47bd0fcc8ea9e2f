"""The learner seam: what the one RL loop (``loop.Trainer``) needs from a backend.

A learner owns the policy's weights and what samples from them. The loop calls, in order:
``start`` once; then per batch ``step`` (one optimiser step on the scored groups) and
``publish`` (the policy endpoint switches to the new weights); ``checkpoint`` at the interval
and at the end; ``close`` always. ``watch`` runs beside all of it and raises if the learner's
engine goes away. Each returns what the loop logs. ``policy`` is the ``Sampler``
the policy endpoint serves; it must keep answering while ``step`` runs, which is how rollouts
for the next step overlap with training.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

from hermes_rl_mcp.errors import HermesRLError
from hermes_rl_mcp.trainer.policy_server import Sampler


class TrainerError(HermesRLError, RuntimeError):
    """A fatal problem of the trainer; its message is printed and the process exits non-zero."""


class PolicyLearner(Protocol):
    policy: Sampler

    async def start(self) -> None: ...

    async def step(self, groups: Sequence[dict[str, Any]]) -> dict[str, float]:
        """One optimiser step; the step's metrics. Raises grpo.BatchError for a malformed batch."""

    async def publish(self, step: int) -> dict[str, float]:
        """Serve the weights after ``step``; timing metrics of the switch."""

    async def checkpoint(self, step: int, kind: str) -> str:
        """Save weights (and optimiser state) and record them in checkpoints.jsonl; the path."""

    async def close(self) -> None: ...

    async def watch(self) -> None:
        """Runs beside training; raises when the learner's engine is gone, never returns otherwise."""
