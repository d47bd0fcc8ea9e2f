"""The local backend's learner: the NumPy policy, trained in a worker thread, served in process."""

from __future__ import annotations

import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import anyio
import numpy as np

from hermes_rl_mcp.trainer.checkpoints import load_checkpoint, save_checkpoint
from hermes_rl_mcp.trainer.exploration import ExploredTurns, RewardedAnswers
from hermes_rl_mcp.trainer.learner import Learner
from hermes_rl_mcp.trainer.model import PolicyModel
from hermes_rl_mcp.trainer.policy_server import PolicyHolder
from hermes_rl_mcp.trainer.seam import TrainerError
from hermes_rl_mcp.trainer.settings import ResumePoint, TrainerConfig
from hermes_rl_mcp.trainer.tokenizer import CharTokenizer


class LocalLearner:
    def __init__(
        self, config: TrainerConfig, run_dir: Path, *, run_id: str | None = None, resume_from: ResumePoint | None = None
    ) -> None:
        self.config = config
        self.run_dir = run_dir
        self.run_id = run_id
        initial = PolicyModel.initialise(CharTokenizer(), hidden_size=config.hidden_size, seed=config.seed)
        explored = ExploredTurns()  # what the policy server explored, for the learner
        rewarded = RewardedAnswers()  # what scored in training, for the policy server
        if resume_from is None:
            self.learner = Learner(initial, config, explored=explored, rewarded=rewarded)
        else:
            self.learner = _resumed_learner(resume_from, initial, config, explored, rewarded)
        step = resume_from.step if resume_from is not None else 0
        self.policy = PolicyHolder(
            model=self.learner.model.copy(), evaluated=self.learner.average.copy(), step=step, default_temperature=config.temperature,
            explore_prompt_words=config.explore_prompt_words, explored=explored,
            explore_rewarded=config.explore_rewarded_answers, rewarded=rewarded,
            rng=np.random.default_rng(config.seed + 1 + step),
        )

    async def start(self) -> None:
        return None

    async def step(self, groups: Sequence[dict[str, Any]]) -> dict[str, float]:
        # A worker thread: the policy endpoint, on the event loop, keeps serving meanwhile.
        return await anyio.to_thread.run_sync(self.learner.step, groups)

    async def publish(self, step: int) -> dict[str, float]:
        started = time.perf_counter()
        self.policy.publish(self.learner.model.copy(), step, evaluated=self.learner.average.copy())
        return {"time/weight_sync": time.perf_counter() - started}

    async def checkpoint(self, step: int, kind: str) -> str:
        path = save_checkpoint(
            self.run_dir,
            step,
            self.learner.model,
            self.learner.optimizer,
            average=self.learner.average,
            kind=kind,
            extra_meta={"trainer": self.config.model_dump(), "run_id": self.run_id},
        )
        return str(path)

    async def close(self) -> None:
        return None

    async def watch(self) -> None:
        await anyio.sleep_forever()  # the policy lives in this process: nothing to watch


def _resumed_learner(
    point: ResumePoint, initial: PolicyModel, config: TrainerConfig, explored: ExploredTurns, rewarded: RewardedAnswers
) -> Learner:
    """The learner as the checkpoint left it: weights, their average, Adam moments and step count.

    The KL reference stays the run's initial policy (the seed's), as it was in the parent run.
    """
    try:
        saved = load_checkpoint(Path(point.checkpoint))
    except (OSError, ValueError, KeyError) as exc:
        raise TrainerError(f"cannot resume from checkpoint {point.checkpoint}: {exc}") from None
    if saved.model.shape != initial.shape:
        raise TrainerError(
            f"checkpoint {point.checkpoint} holds a model of shape {saved.model.shape.to_dict()}, "
            f"this run's trainer settings make {initial.shape.to_dict()}: resume with the parent's trainer settings"
        )
    learner = Learner(saved.model, config, explored=explored, rewarded=rewarded)
    if saved.optimizer_state:
        learner.optimizer.load_state(saved.optimizer_state)
    if saved.average is not None:
        learner.average = saved.average
    learner.steps_averaged = point.step
    if learner.reference is not None:
        learner.reference = initial
    return learner
