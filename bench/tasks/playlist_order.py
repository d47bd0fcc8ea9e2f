"""Order songs by their running time, shortest or longest first (ordering).

"Can you put these songs in order from shortest to longest? Ember (3:42), Orbit (2:58), Velvet
(4:05). Just the titles, separated by commas." -> "Orbit, Ember, Velvet". Three or four one-word
titles are given with lengths between 2:00 and 5:59 (all different), in a few list styles, and
the user asks for shortest first or longest first. Items come from a seeded random; a tenth of
the possible track lists, chosen by a SHA-256 hash, are held out for evaluation. The answer is
split at commas; it scores the share of positions holding the right title (case and surrounding
spaces ignored, a final "and" allowed), divided by the longer of the two lists, so 1.0 only for
the whole order.
"""

from __future__ import annotations

import hashlib
import random
import re
from typing import Any

from hermes_rl_mcp.sdk import APIServerConfig, BaseEnv, BaseEnvConfig, ScoredDataGroup

TITLES = (
    "Ember", "Orbit", "Velvet", "Harbor", "Tides", "Neon", "Aurora", "Comet", "Echo", "Marble",
    "Willow", "Static", "Meadow", "Cinder", "Halo", "Mirage", "Cobalt", "Ivory", "Nomad", "Prism",
    "Quartz", "Rumble", "Tundra", "Vesper", "Zephyr", "Bloom", "Fable", "Glow", "Hush", "Indigo",
    "Kismet", "Lagoon", "Sparks", "Paper", "Roads", "Gold", "Sunday", "Hollow",
)
ASKS = (
    ("Can you put these songs in order from shortest to longest? {tracks}.", False),
    ("I'm making a running playlist and want the longest track first. Order these for me: {tracks}.", True),
    ("Sort my tracks by length, shortest first: {tracks}.", False),
    ("I'd like the party playlist to end on the shortest song, so longest first please: {tracks}.", True),
    ("Here are the songs for my walk to work: {tracks}. Which order goes from shortest to longest?", False),
    ("Rank these by running time, longest to shortest: {tracks}.", True),
)
FORMAT = " Just the titles, separated by commas."
STYLES = ("{title} ({length})", "{title} {length}", "{title} - {length}", '"{title}" ({length})')


def length_text(seconds: int) -> str:
    return f"{seconds // 60}:{seconds % 60:02d}"


def held_out(key: str) -> bool:
    return hashlib.sha256(key.encode()).digest()[0] % 10 == 0


def make_item(rng: random.Random) -> tuple[str, str, str]:
    """(key, prompt, ordered titles joined by ", ") for one random track list."""
    count = rng.randint(3, 4)
    titles = rng.sample(TITLES, count)
    lengths = rng.sample(range(120, 360), count)
    template, longest_first = rng.choice(ASKS)
    style = rng.choice(STYLES)
    listed = [style.format(title=t, length=length_text(s)) for t, s in zip(titles, lengths)]
    tracks = ", ".join(listed[:-1]) + (" and " if rng.random() < 0.5 else ", ") + listed[-1]
    prompt = template.format(tracks=tracks) + FORMAT
    order = [t for _, t in sorted(zip(lengths, titles), reverse=longest_first)]
    key = f"{longest_first}|" + ";".join(f"{t}:{s}" for t, s in zip(titles, lengths))
    return key, prompt, ", ".join(order)


def make_items(count: int, *, seed: int, evaluation: bool) -> list[tuple[str, str, str]]:
    rng = random.Random(f"playlist_order:{seed}")
    found: dict[str, tuple[str, str, str]] = {}
    while len(found) < count:
        item = make_item(rng)
        if held_out(item[0]) == evaluation:
            found.setdefault(item[0], item)
    return list(found.values())


def split_titles(text: str) -> list[str]:
    parts = re.split(r",|\band\b", text.strip().rstrip("."))
    return [p.strip().strip('"').lower() for p in parts if p.strip()]


def score(answer: str, target: str) -> float:
    """The share of positions holding the right title."""
    given, wanted = split_titles(answer), split_titles(target)
    if not given:
        return 0.0
    same = sum(g == w for g, w in zip(given, wanted))
    return same / max(len(given), len(wanted))


class PlaylistOrderEnv(BaseEnv):
    """Order songs by running time (single turn, ordering)."""

    name = "playlist_order"

    def __init__(self, config: BaseEnvConfig, server_configs: list[APIServerConfig], slurm: bool = False, testing: bool = False) -> None:
        super().__init__(config, server_configs, slurm, testing)
        self.correct: list[float] = []

    @classmethod
    def config_init(cls) -> tuple[BaseEnvConfig, list[APIServerConfig]]:
        config = BaseEnvConfig(group_size=8, batch_size=64, total_steps=250, steps_per_eval=25, max_token_length=320, use_wandb=False)
        return config, [APIServerConfig(model_name="policy", base_url="http://127.0.0.1:8001/v1", api_key="x")]

    async def setup(self) -> None:
        self.train_items = make_items(5000, seed=self.config.seed, evaluation=False)
        self.eval_items = make_items(200, seed=self.config.seed, evaluation=True)
        self.rng = random.Random(self.config.seed)

    async def get_next_item(self) -> Any:
        return self.rng.choice(self.train_items)

    @staticmethod
    def prompt(item: Any) -> list[dict[str, str]]:
        return [{"role": "user", "content": item[1]}]

    async def collect_trajectories(self, item: Any) -> tuple[ScoredDataGroup | None, list[Any]]:
        from hermes_rl_mcp.sdk.policy_client import scored_group

        group = await self.policy.chat(self.prompt(item), n=self.config.group_size, max_tokens=40)
        scores = [score(c.text, item[2]) for c in group.completions]
        self.correct.extend(1.0 if s == 1.0 else 0.0 for s in scores)
        return scored_group(group, scores), []

    async def evaluate(self, *args: Any, **kwargs: Any) -> dict[str, float]:
        from hermes_rl_mcp.sdk.concurrency import gather_bounded

        async def one(item: Any) -> float:
            group = await self.policy.chat(self.prompt(item), n=1, max_tokens=40, temperature=0.0)
            return score(group.completions[0].text, item[2])

        scores = await gather_bounded((one(i) for i in self.eval_items), self.config.max_eval_workers)
        metrics = {
            "eval/percent_correct": sum(s == 1.0 for s in scores) / len(scores),
            "eval/mean_score": sum(scores) / len(scores),
        }
        await self.wandb_log(metrics)
        return metrics

    async def wandb_log(self, wandb_metrics: dict[str, float] | None = None) -> None:
        metrics = dict(wandb_metrics or {})
        if self.correct:
            metrics["train/percent_correct"] = sum(self.correct) / len(self.correct)
            self.correct = []
        await super().wandb_log(metrics)


if __name__ == "__main__":
    PlaylistOrderEnv.cli()
