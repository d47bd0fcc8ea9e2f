"""Model-guided vs uniform item sampling, same environment and seed, one run.

LEARNING POLICY USED HERE: a stand-in, not the project's trainer. It is a small tabular softmax
policy trained by the same group-relative advantages the trainer uses ((score - group mean) /
group std, REINFORCE on every decision of the rollout), with one update per batch of
``batch_size`` sequences from kept groups, as the trainer takes one step per batch.

- navigation: pi(action | position, goal) over {L, R, invalid} with logits = a table over
  sign(goal - position) (shared by all states, so it generalises to the held-out (start, goal)
  pairs) + a table over (position, goal); scored by the environment's own Corridor and
  discounted return; target: success of the sampling policy (temperature 1, not greedy: a
  greedy table is right after a single step) on the held-out pairs >= 0.9.

Arithmetic is compared on the real stack only (bench/bench_sampler_stack.py): its answers are
constrained and earn partial credit, and a per-problem table, sharing nothing between problems,
settles on partly right answers for good, so a stand-in would say nothing about the trainer.

Both samplers see identical seeds, items, policy initialisation and update rule; only the item
choice differs (exploration_rate 0.1 = model-guided, 1.0 = uniform). Wall time is measured for
the whole loop; since this policy generates almost for free, a second wall-time figure charges
each generated group a fixed generation cost (``--gen-ms``, default 40 ms, about what a group of
8 short completions costs through the local policy server), which is the regime of a real run.

Usage: python bench/bench_sampler.py [--seeds 5] [--gen-ms 40]
"""

from __future__ import annotations

import argparse
import importlib.util
import math
import statistics
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

import numpy as np

from hermes_rl_mcp.sdk.sampler import ItemSampler

ROOT = Path(__file__).resolve().parent.parent
GROUP_SIZE = 8
BATCH_SIZE = 64
MAX_STEPS = 2000
EVAL_EVERY = 1


def load_env(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(f"bench_env_{name}", ROOT / "environments" / f"{name}.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def group_advantages(scores: list[float]) -> np.ndarray:
    values = np.asarray(scores, dtype=float)
    return (values - values.mean()) / (values.std() + 1e-6)


class NavigationPolicy:
    ACTIONS = ("L", "R", "?")

    def __init__(self, env: ModuleType, rng: np.random.Generator, lr: float = 0.05) -> None:
        self.env = env
        config, _ = env.NavigationEnv.config_init()
        self.length, self.max_turns, self.gamma = config.corridor_length, config.max_turns, config.discount_factor
        self.train, self.eval = env.split_pairs(self.length)
        self.logits = np.zeros((self.length, self.length, len(self.ACTIONS)))
        self.direction = np.zeros((2, len(self.ACTIONS)))
        self.rng = rng
        self.lr = lr

    def row(self, pos: int, goal: int) -> np.ndarray:
        return self.logits[pos, goal] + self.direction[int(goal > pos)]

    def rollout(self, pair: tuple[int, int], greedy: bool = False) -> tuple[float, list[tuple[int, int, int]]]:
        corridor = self.env.Corridor(pair[0], pair[1], self.length)
        decisions: list[tuple[int, int, int]] = []
        rewards: list[float] = []
        for _ in range(self.max_turns):
            row = self.row(corridor.position, corridor.goal)
            if greedy:
                action = int(row.argmax())
            else:
                p = np.exp(row - row.max())
                action = int(self.rng.choice(3, p=p / p.sum()))
            decisions.append((corridor.position, corridor.goal, action))
            outcome = corridor.act(self.ACTIONS[action])
            rewards.append(outcome.reward)
            if outcome.next_message is None:
                break
        return self.env.discounted_return(rewards, self.gamma), decisions

    def update(self, batch: list[tuple[list[float], list[list[tuple[int, int, int]]]]]) -> None:
        grad = np.zeros_like(self.logits)
        grad_direction = np.zeros_like(self.direction)
        count = 0
        for scores, trajectories in batch:
            for adv, decisions in zip(group_advantages(scores), trajectories):
                for pos, goal, action in decisions:
                    row = self.row(pos, goal)
                    p = np.exp(row - row.max())
                    p /= p.sum()
                    g = -p
                    g[action] += 1.0
                    grad[pos, goal] += adv * g
                    grad_direction[int(goal > pos)] += adv * g
                count += 1
        self.logits += self.lr * grad / max(count, 1) * GROUP_SIZE
        self.direction += self.lr * grad_direction / max(count, 1) * GROUP_SIZE

    @staticmethod
    def passed(score: float) -> bool:
        return score > 0  # reached the goal

    def accuracy(self, rollouts_per_pair: int = 20) -> float:
        """Success rate of the sampling policy on the held-out pairs (Monte Carlo)."""
        wins = sum(self.rollout(pair)[0] > 0 for pair in self.eval for _ in range(rollouts_per_pair))
        return wins / (len(self.eval) * rollouts_per_pair)


TARGETS = {"navigation": 0.9}
POLICIES = {"navigation": NavigationPolicy}


@dataclass
class Outcome:
    groups: int
    dropped: int
    steps: int | None  # trainer steps to reach the target, None if never
    loop_s: float
    reached: bool

    @property
    def drop_fraction(self) -> float:
        return self.dropped / max(self.groups, 1)

    def modelled_wall_s(self, gen_ms: float) -> float:
        return self.loop_s + self.groups * gen_ms / 1000.0


def run(env_name: str, exploration_rate: float, seed: int) -> Outcome:
    env = load_env(env_name)
    policy = POLICIES[env_name](env, np.random.default_rng(seed))
    sampler = ItemSampler(len(policy.train), group_size=GROUP_SIZE, exploration_rate=exploration_rate, seed=seed)
    groups = dropped = steps = 0
    batch: list = []
    started = time.perf_counter()
    while steps < MAX_STEPS:
        index = sampler.next_index()
        rollouts = [policy.rollout(policy.train[index]) for _ in range(GROUP_SIZE)]
        scores = [score for score, _ in rollouts]
        sampler.observe(index, scores)
        groups += 1
        if max(scores) - min(scores) < 1e-9:
            dropped += 1
            continue
        batch.append((scores, [decisions for _, decisions in rollouts]))
        if len(batch) * GROUP_SIZE >= BATCH_SIZE:
            policy.update(batch)
            batch = []
            steps += 1
            if steps % EVAL_EVERY == 0 and policy.accuracy() >= TARGETS[env_name]:
                return Outcome(groups, dropped, steps, time.perf_counter() - started, True)
    return Outcome(groups, dropped, None, time.perf_counter() - started, False)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--gen-ms", type=float, default=40.0, help="generation cost charged per group for the modelled wall time")
    args = parser.parse_args(argv)
    names = ["navigation"]
    print("learning policy: tabular softmax stand-in trained with group-relative advantages (NOT the project trainer)")
    print(f"group_size {GROUP_SIZE}, batch_size {BATCH_SIZE}, eval every {EVAL_EVERY} steps, seeds 0..{args.seeds - 1}")
    for name in names:
        results: dict[str, list[Outcome]] = {"guided": [], "uniform": []}
        for seed in range(args.seeds):
            results["guided"].append(run(name, 0.1, seed))
            results["uniform"].append(run(name, 1.0, seed))
        print(f"\n{name} (target {TARGETS[name]:.2f} {'held-out success of the sampling policy' if name == 'navigation' else 'expected accuracy on training problems'})")
        print(f"{'sampler':8} {'dropped':>8} {'steps':>7} {'groups':>7} {'loop s':>7} {'wall s @' + str(int(args.gen_ms)) + 'ms':>12} reached")
        summary = {}
        for kind, outcomes in results.items():
            reached = [o for o in outcomes if o.reached]
            drop = statistics.mean(o.drop_fraction for o in outcomes)
            steps = statistics.mean(o.steps for o in reached) if reached else math.nan
            groups = statistics.mean(o.groups for o in reached) if reached else math.nan
            loop = statistics.mean(o.loop_s for o in reached) if reached else math.nan
            wall = statistics.mean(o.modelled_wall_s(args.gen_ms) for o in reached) if reached else math.nan
            summary[kind] = (drop, steps, loop, wall)
            print(f"{kind:8} {drop:8.3f} {steps:7.1f} {groups:7.0f} {loop:7.2f} {wall:12.2f} {len(reached)}/{len(outcomes)}")
        g, u = summary["guided"], summary["uniform"]
        print(
            f"ratios guided/uniform: dropped fraction {g[0] / max(u[0], 1e-9):.2f}, steps {g[1] / u[1]:.2f}, "
            f"loop wall time {g[2] / u[2]:.2f}, modelled wall time {g[3] / u[3]:.2f}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
