"""Pick the word that rhymes with a given word from a short list (selection).

Words come in rhyme families spelled alike ("light night bright ...", "cake lake make ...").
An item is a target word, one other word of its family and two or three words of other
families, shuffled, e.g.
'Which of these words rhymes with "cake": jump, lake, ring? Answer with just the word.' -> "lake".
Each (target, answer) pair is one item with fixed distractors; a tenth of the pairs, chosen by
CRC-32, are held out for evaluation (every word still appears in training items). A reply scores
1.0 when, stripped and lowercased, it is exactly the rhyming word, and 0 otherwise.
"""

from __future__ import annotations

import random
import zlib
from typing import Any

from hermes_rl_mcp.sdk import APIServerConfig, BaseEnv, BaseEnvConfig, ScoredDataGroup

FAMILIES = (
    ("light", "night", "bright", "fight", "right", "sight", "tight"),
    ("cake", "lake", "make", "take", "bake", "wake", "snake"),
    ("ball", "call", "fall", "hall", "tall", "wall", "small"),
    ("ring", "sing", "king", "wing", "thing", "spring", "bring"),
    ("cat", "hat", "bat", "mat", "rat", "flat", "chat"),
    ("dog", "log", "frog", "fog", "jog", "hog"),
    ("rain", "train", "chain", "brain", "plain", "pain", "stain"),
    ("more", "store", "shore", "core", "score", "chore"),
    ("bell", "shell", "well", "tell", "smell", "spell", "sell"),
    ("rock", "clock", "sock", "block", "lock", "shock"),
    ("jump", "bump", "lump", "pump", "dump", "stump"),
    ("green", "seen", "queen", "screen", "teen"),
    ("day", "play", "stay", "clay", "tray", "say"),
    ("moon", "soon", "spoon", "noon", "balloon"),
    ("ship", "trip", "lip", "chip", "drip", "slip"),
    ("sound", "round", "ground", "found", "pound", "hound"),
    ("fast", "last", "past", "cast", "vast", "mast"),
    ("sun", "run", "fun", "bun", "spun"),
    ("bed", "red", "sled", "shed", "fed"),
    ("pink", "drink", "think", "sink", "wink"),
)


def held_out(target: str, answer: str) -> bool:
    return zlib.crc32(f"{target}:{answer}".encode()) % 10 == 0


def all_items() -> list[tuple[str, tuple[str, ...], str]]:
    """(target, options, answer) for every ordered pair of distinct words of one family."""
    items = []
    for f, family in enumerate(FAMILIES):
        other_families = [fam for g, fam in enumerate(FAMILIES) if g != f]
        for target in family:
            for answer in family:
                if answer == target:
                    continue
                rng = random.Random(f"rhyme_pick:{target}:{answer}")
                # two or three distractors, each from a different family, so only one option rhymes
                distractors = [rng.choice(fam) for fam in rng.sample(other_families, rng.choice((2, 3)))]
                options = distractors + [answer]
                rng.shuffle(options)
                items.append((target, tuple(options), answer))
    return items


def score(reply: str, answer: str) -> float:
    text = reply.strip().strip(".\"'").strip().lower()
    return 1.0 if text == answer else 0.0


class RhymePickEnv(BaseEnv):
    """Choose the word that rhymes with a given word (single turn, selection)."""

    name = "rhyme_pick"

    def __init__(self, config: BaseEnvConfig, server_configs: list[APIServerConfig], slurm: bool = False, testing: bool = False) -> None:
        super().__init__(config, server_configs, slurm, testing)
        self.correct: list[float] = []

    @classmethod
    def config_init(cls) -> tuple[BaseEnvConfig, list[APIServerConfig]]:
        config = BaseEnvConfig(group_size=8, batch_size=64, total_steps=200, steps_per_eval=25, max_token_length=192, use_wandb=False)
        return config, [APIServerConfig(model_name="policy", base_url="http://127.0.0.1:8001/v1", api_key="x")]

    async def setup(self) -> None:
        items = all_items()
        self.train_items = [i for i in items if not held_out(i[0], i[2])]
        self.eval_items = [i for i in items if held_out(i[0], i[2])]
        self.rng = random.Random(self.config.seed)
        self.max_tokens = max(len(w) for fam in FAMILIES for w in fam) + 4

    async def get_next_item(self) -> Any:
        return self.rng.choice(self.train_items)

    @staticmethod
    def prompt(item: Any) -> list[dict[str, str]]:
        target, options, _ = item
        return [{"role": "user", "content": f'Which of these words rhymes with "{target}": {", ".join(options)}? Answer with just the word.'}]

    async def collect_trajectories(self, item: Any) -> tuple[ScoredDataGroup | None, list[Any]]:
        from hermes_rl_mcp.sdk.policy_client import scored_group

        group = await self.policy.chat(self.prompt(item), n=self.config.group_size, max_tokens=self.max_tokens)
        scores = [score(c.text, item[2]) for c in group.completions]
        self.correct.extend(1.0 if s == 1.0 else 0.0 for s in scores)
        return scored_group(group, scores), []

    async def evaluate(self, *args: Any, **kwargs: Any) -> dict[str, float]:
        from hermes_rl_mcp.sdk.concurrency import gather_bounded

        async def one(item: Any) -> float:
            group = await self.policy.chat(self.prompt(item), n=1, max_tokens=self.max_tokens, temperature=0.0)
            return score(group.completions[0].text, item[2])

        scores = await gather_bounded((one(i) for i in self.eval_items), self.config.max_eval_workers)
        metrics = {"eval/percent_correct": sum(s == 1.0 for s in scores) / len(scores)}
        await self.wandb_log(metrics)
        return metrics

    async def wandb_log(self, wandb_metrics: dict[str, float] | None = None) -> None:
        metrics = dict(wandb_metrics or {})
        if self.correct:
            metrics["train/percent_correct"] = sum(self.correct) / len(self.correct)
            self.correct = []
        await super().wandb_log(metrics)


if __name__ == "__main__":
    RhymePickEnv.cli()
