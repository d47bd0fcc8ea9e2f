"""One task on the local trainer in process, over several seeds: quick comparisons of trainer changes.

    python bench/bench_in_process.py TASK [--seeds 0 1] [--steps N] [--show K] [--set FIELD=VALUE ...]

TASK is a file of ``bench/tasks/`` or ``environments/`` (``count_letter``, ``reverse_text``...).
The environment's own ``setup``, ``get_next_item``, ``collect_trajectories`` and ``evaluate``
run unchanged, but its policy requests go straight to the run's ``PolicyHolder`` (the local
policy server's sampler, exploration included) instead of over HTTP, and each batch goes
straight to the ``Learner``: no trajectory API, no processes, no sampling lag. A batch is
formed as the runtime forms one (groups whose scores are all equal are dropped, as
``ensure_scores_are_not_same`` asks), with the environment's defaults and the local trainer's
(plus the environment's ``trainer_defaults``). It prints each seed's held-out curve (eval
percent correct every ``steps_per_eval`` steps, with the mean training score of the samples
since the evaluation before) and, with ``--show``, prompts and replies of the
last evaluation; ``--set`` changes a trainer setting (``--set learning_rate=0.005``) for
exploring. Figures differ from ``bench_generality.py``'s, which runs the servers: there
rollouts lag the trainer by up to ``max_batches_offpolicy`` batches. NumPy runs on one BLAS
thread here (unless ``OMP_NUM_THREADS`` says otherwise), so a seed's run repeats exactly.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib.util
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

# One BLAS thread, set before NumPy loads: a matrix product's sums are added in an order that
# depends on the thread count, and those last-digit differences grow over a run, so a seed's
# figures repeat exactly only with the same count (one seed's repeat_word run ended at 0.778 with
# one thread and 0.667 with two).
for _variable in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_variable, "1")

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from config_edits import add_set_option  # noqa: E402  (this script's folder)
from hermes_rl_mcp.sdk.base import BaseEnv  # noqa: E402
from hermes_rl_mcp.sdk.policy_client import Completion, CompletionGroup, evaluating, is_evaluating  # noqa: E402
from hermes_rl_mcp.sdk.runtime import EqualScoreFilter  # noqa: E402
from hermes_rl_mcp.trainer.local_learner import LocalLearner  # noqa: E402
from hermes_rl_mcp.trainer.policy_server import ChatRequest, PolicyHolder  # noqa: E402
from hermes_rl_mcp.trainer.settings import TrainerConfig  # noqa: E402


def environment_class(task: str) -> type[BaseEnv]:
    for folder in (REPO / "bench" / "tasks", REPO / "environments"):
        path = folder / f"{task}.py"
        if path.exists():
            spec = importlib.util.spec_from_file_location(task, path)
            module = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
            sys.modules[task] = module  # as the server loads one: a dataclass in the file looks itself up there
            spec.loader.exec_module(module)  # type: ignore[union-attr]
            return next(
                c for c in vars(module).values()
                if isinstance(c, type) and issubclass(c, BaseEnv) and c.__module__ == task
            )
    raise SystemExit(f"no task {task!r} in bench/tasks/ or environments/")


class InProcessPolicy:
    """What an environment's ``self.policy`` offers (``chat``), answered by a PolicyHolder."""

    def __init__(self, holder: PolicyHolder) -> None:
        self.holder = holder
        self.evaluated: list[tuple[str, str]] = []  # (last user message, reply) of evaluation requests

    async def chat(
        self,
        messages: list[dict[str, str]],
        *,
        n: int = 1,
        max_tokens: int = 16,
        temperature: float | None = None,
        stop: list[str] | None = None,
        guided_choice: list[str] | None = None,
    ) -> CompletionGroup:
        request = ChatRequest(
            messages=messages, n=n, max_tokens=max_tokens, temperature=temperature, stop=stop, guided_choice=guided_choice
        )
        request._for_evaluation = is_evaluating()
        prompt = self.holder.encode_chat(messages)
        samples = await self.holder.sample(request, prompt)
        completions = [
            Completion(text=self.holder.decode(s.token_ids), token_ids=s.token_ids, logprobs=s.logprobs, finish_reason=s.finish_reason)
            for s in samples
        ]
        group = CompletionGroup(prompt_token_ids=prompt, completions=completions)
        if guided_choice is not None:
            group.generation_params = {"guided_choice": list(guided_choice)}
        if request.for_evaluation:
            self.evaluated.append((str(messages[-1].get("content")), completions[0].text))
        return group


async def run(task: str, seed: int, steps: int | None, show: int, edits: dict[str, str]) -> list[tuple[int, float]]:
    cls = environment_class(task)
    config, servers = cls.config_init()
    trainer = TrainerConfig(**{**getattr(cls, "trainer_defaults", {}), **edits, "seed": seed})
    batch_size = config.batch_size if config.batch_size > 0 else trainer.batch_size  # -1: the trainer's
    total = steps if steps is not None else config.total_steps
    env = cls(config, servers)
    curve: list[tuple[int, float]] = []
    started = time.perf_counter()
    with tempfile.TemporaryDirectory() as run_dir:
        learner = LocalLearner(trainer, Path(run_dir))
        policy = InProcessPolicy(learner.policy)
        env.policy = policy  # type: ignore[assignment]
        await env.setup()
        admit = EqualScoreFilter()
        collected = kept = 0  # groups, since the last evaluation
        scores: list[float] = []  # every sample's training score, since the last evaluation
        boost = 1.0
        for step in range(total + 1):
            if step % config.steps_per_eval == 0 or step == total:
                policy.evaluated.clear()
                with evaluating():
                    metrics = await env.evaluate()
                accuracy = float(metrics["eval/percent_correct"])
                curve.append((step, accuracy))
                # groups sampled per group trained on, and the exploration boost at the last step
                spent = f"  {collected / kept:5.1f} groups a kept one  boost {boost:.2f}" if kept else ""
                trained = f"  train score {sum(scores) / len(scores):.3f}" if scores else ""
                print(f"  seed {seed}  step {step:4d}  eval {accuracy:.3f}  {time.perf_counter() - started:6.1f} s{trained}{spent}", flush=True)
                collected = kept = 0
                scores.clear()
            if step == total:
                break
            groups: list[dict[str, Any]] = []
            for _ in range(8 * batch_size):  # bounded, as a starving runtime lets groups through
                group, _ = await env.collect_trajectories(await env.get_next_item())
                collected += 1
                scores.extend(group["scores"] if group else ())
                if group and admit.admit(list(group["scores"])):
                    groups.append(group)
                if sum(len(g["tokens"]) for g in groups) >= batch_size:
                    break
            kept += len(groups)
            boost = (await learner.step(groups)).get("explore/boost", 1.0)
            await learner.publish(step + 1)
    for prompt, reply in policy.evaluated[-show:] if show else ():
        print(f"    {prompt[-50:]!r} -> {reply!r}")
    return curve


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("task")
    parser.add_argument(
        "--seeds", type=int, nargs="+", default=[0],
        help="trainer seeds (initialisation, sampling, exploration); the environment keeps its own",
    )
    parser.add_argument("--steps", type=int, default=None, help="trainer steps (default: the environment's total_steps)")
    parser.add_argument("--show", type=int, default=0, metavar="K", help="print the last K prompts and replies of the last evaluation (a conversation's last turns)")
    add_set_option(parser, "a trainer setting (default: the task's and the trainer's)")
    args = parser.parse_args()
    edits = dict(args.set)
    finals = []
    for seed in args.seeds:
        curve = asyncio.run(run(args.task, seed, args.steps, args.show, edits))
        finals.append(curve[-1][1])
    print(f"{args.task}: final eval per seed {', '.join(f'{f:.3f}' for f in finals)}")


if __name__ == "__main__":
    main()
