"""Say what kind of file a file name is by its extension, answering through guided_choice (classification).

"I found beach_2019.flac on an old USB stick. What kind of file is it?" -> "audio". The labels
are image (jpg, png, gif), audio (mp3, wav, flac), video (mp4, mov, avi) and document (pdf,
docx, txt). File names join one of 30 everyday stems, in four variants (plain, with a year,
"_v2" or "_final"), to one of the twelve extensions, and every name is asked under three
phrasings. A tenth of the file names, chosen by a SHA-256 hash, are held out for evaluation
(each under one phrasing), so the policy must read the extension, not memorise names. Answers
are constrained to the four labels; a completion scores 1.0 for the right label and 0
otherwise.
"""

from __future__ import annotations

import hashlib
import random
from typing import Any

from hermes_rl_mcp.sdk import APIServerConfig, BaseEnv, BaseEnvConfig, ScoredDataGroup

LABELS = ["image", "audio", "video", "document"]
EXTENSIONS = {
    "jpg": "image", "png": "image", "gif": "image",
    "mp3": "audio", "wav": "audio", "flac": "audio",
    "mp4": "video", "mov": "video", "avi": "video",
    "pdf": "document", "docx": "document", "txt": "document",
}
STEMS = (
    "holiday", "party", "meeting", "garden", "project", "backup", "draft", "notes", "untitled", "birthday",
    "wedding", "trip", "report", "summer", "beach", "family", "school", "lecture", "interview", "budget",
    "kitchen", "dog", "grandma", "office", "team", "launch", "training", "lesson", "game", "picnic",
)
VARIANTS = ("{stem}", "{stem}_2019", "{stem}_v2", "{stem}_final")
TEMPLATES = (
    "What kind of file is {file}: image, audio, video or document?",
    "I found {file} on an old USB stick. What kind of file is it?",
    "My colleague just emailed me {file}. Is that an image, audio, video or a document?",
)


def held_out(file: str) -> bool:
    return hashlib.sha256(file.encode()).digest()[0] % 10 == 0


def all_items() -> tuple[list[tuple[str, str, str]], list[tuple[str, str, str]]]:
    """(file, prompt, label) items: train under every phrasing, eval under one each."""
    train, evaluation = [], []
    for stem in STEMS:
        for variant in VARIANTS:
            for ext, label in EXTENSIONS.items():
                file = variant.format(stem=stem) + "." + ext
                if held_out(file):
                    template = TEMPLATES[len(evaluation) % len(TEMPLATES)]
                    evaluation.append((file, template.format(file=file), label))
                else:
                    train.extend((file, t.format(file=file), label) for t in TEMPLATES)
    return train, evaluation


def exact(answer: str, target: str) -> float:
    return 1.0 if answer.strip() == target else 0.0


class FileKindEnv(BaseEnv):
    """Classify a file name as image, audio, video or document (single turn, guided_choice)."""

    name = "file_kind"

    def __init__(self, config: BaseEnvConfig, server_configs: list[APIServerConfig], slurm: bool = False, testing: bool = False) -> None:
        super().__init__(config, server_configs, slurm, testing)
        self.correct: list[float] = []

    @classmethod
    def config_init(cls) -> tuple[BaseEnvConfig, list[APIServerConfig]]:
        config = BaseEnvConfig(group_size=8, batch_size=64, total_steps=200, steps_per_eval=25, max_token_length=192, use_wandb=False)
        return config, [APIServerConfig(model_name="policy", base_url="http://127.0.0.1:8001/v1", api_key="x")]

    async def setup(self) -> None:
        self.train_items, self.eval_items = all_items()
        self.rng = random.Random(self.config.seed)

    async def get_next_item(self) -> Any:
        return self.rng.choice(self.train_items)

    @staticmethod
    def prompt(item: Any) -> list[dict[str, str]]:
        return [{"role": "user", "content": item[1]}]

    async def collect_trajectories(self, item: Any) -> tuple[ScoredDataGroup | None, list[Any]]:
        from hermes_rl_mcp.sdk.policy_client import scored_group

        group = await self.policy.chat(self.prompt(item), n=self.config.group_size, max_tokens=10, guided_choice=LABELS)
        scores = [exact(c.text, item[2]) for c in group.completions]
        self.correct.extend(scores)
        return scored_group(group, scores), []

    async def evaluate(self, *args: Any, **kwargs: Any) -> dict[str, float]:
        from hermes_rl_mcp.sdk.concurrency import gather_bounded

        async def one(item: Any) -> float:
            group = await self.policy.chat(self.prompt(item), n=1, max_tokens=10, guided_choice=LABELS, temperature=0.0)
            return exact(group.completions[0].text, item[2])

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
    FileKindEnv.cli()
