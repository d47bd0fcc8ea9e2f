"""Keep track of whose turn it is in a card game as reverse and skip cards are played (multi-turn).

The user opens with the seating: "Uno night! We're sitting in this order, going clockwise:
Maya, Tom, Priya, Sam. Maya goes first and plays a green 7. Who's next?" and, whatever the
reply, goes on with the player whose turn it really was: "Tom plays a reverse. Who's next?",
"Maya plays a skip. Who's next?"... Four questions in all. A reverse card turns the direction
of play round for the rest of the game; a skip card makes the next player in the current
direction miss a go. So each answer depends on the seating from the first message and on
every reverse played since, not on the last message alone. Each right answer earns 0.25, so
an episode returns the share of questions answered right. Games (3 to 5 players from a list
of first names, a starting player, the cards) are generated from a seed; a tenth of all
possible games, chosen by a SHA-256 hash of the game, are reserved for evaluation and never
trained on.
"""

from __future__ import annotations

import hashlib
import random
from typing import Any, NamedTuple

from pydantic import Field

from hermes_rl_mcp.sdk import APIServerConfig, BaseEnv, BaseEnvConfig, ScoredDataGroup
from hermes_rl_mcp.sdk.multiturn import Episode, TurnOutcome, episodes_to_group, run_episode

NAMES = (
    "Maya", "Tom", "Priya", "Sam", "Leo", "Nina", "Omar", "Zoe", "Ben", "Aisha", "Jack", "Ella",
    "Ravi", "Lucy", "Dan", "Mia", "Kofi", "Sara", "Finn", "Hana", "Luis", "Grace", "Theo", "Ivy",
)
COLOURS = ("red", "green", "blue", "yellow")
QUESTIONS = 4
MAX_TOKENS = max(map(len, NAMES)) + 3


class WhoseTurnConfig(BaseEnvConfig):
    train_size: int = Field(5000, gt=0, le=1_000_000, description="Training games generated.")
    eval_size: int = Field(200, gt=0, le=100_000, description="Held-out games evaluated.")


class Game(NamedTuple):
    seats: tuple[str, ...]
    start: int  # index in seats of the player who goes first
    cards: tuple[str, ...]  # the card played on each question's turn: "green 7", "reverse" or "skip"

    def key(self) -> str:
        return ",".join(self.seats) + f"|{self.start}|" + ",".join(self.cards)

    def turns(self) -> list[tuple[str, str]]:
        """(player who plays the card, player whose turn comes next) for each question."""
        out = []
        position, direction = self.start, 1
        for card in self.cards:
            player = self.seats[position]
            if card == "reverse":
                direction = -direction
            step = 2 if card == "skip" else 1
            position = (position + direction * step) % len(self.seats)
            out.append((player, self.seats[position]))
        return out


def held_out(game: Game) -> bool:
    return hashlib.sha256(game.key().encode()).digest()[0] % 10 == 0


def card_phrase(card: str) -> str:
    return f"a {card}"


def make_game(rng: random.Random) -> Game:
    seats = tuple(rng.sample(NAMES, rng.randint(3, 5)))
    start = rng.randrange(len(seats))
    cards = []
    for _ in range(QUESTIONS):
        roll = rng.random()
        cards.append("reverse" if roll < 0.3 else "skip" if roll < 0.45 else f"{rng.choice(COLOURS)} {rng.randint(0, 9)}")
    return Game(seats, start, tuple(cards))


def make_games(count: int, *, seed: int, evaluation: bool) -> list[Game]:
    rng = random.Random(f"whose_turn:{seed}:{'eval' if evaluation else 'train'}")
    found: dict[str, Game] = {}
    while len(found) < count:
        game = make_game(rng)
        if held_out(game) == evaluation:
            found[game.key()] = game
    return list(found.values())


def opening(game: Game) -> str:
    first = game.seats[game.start]
    return (
        f"Uno night! We're sitting in this order, going clockwise: {', '.join(game.seats)}. "
        f"{first} goes first and plays {card_phrase(game.cards[0])}. Who's next?"
    )


class Conversation:
    def __init__(self, game: Game) -> None:
        self.game = game
        self.turns = game.turns()
        self.asked = 0
        self.right = 0

    def reply(self, text: str) -> TurnOutcome:
        expected = self.turns[self.asked][1]
        correct = text.strip() == expected
        self.right += correct
        self.asked += 1
        if self.asked == len(self.turns):
            return TurnOutcome(reward=0.25 if correct else 0.0, next_message=None)
        player = self.turns[self.asked][0]
        message = f"{player} plays {card_phrase(self.game.cards[self.asked])}. Who's next?"
        return TurnOutcome(reward=0.25 if correct else 0.0, next_message=message)


class WhoseTurnEnv(BaseEnv):
    """Say whose turn comes next in a card game over several turns (multi-turn)."""

    name = "whose_turn"
    env_config_cls = WhoseTurnConfig

    def __init__(self, config: WhoseTurnConfig, server_configs: list[APIServerConfig], slurm: bool = False, testing: bool = False) -> None:
        super().__init__(config, server_configs, slurm, testing)
        self.all_right: list[float] = []

    @classmethod
    def config_init(cls) -> tuple[WhoseTurnConfig, list[APIServerConfig]]:
        config = WhoseTurnConfig(group_size=8, batch_size=64, total_steps=300, steps_per_eval=25, max_token_length=768, use_wandb=False)
        return config, [APIServerConfig(model_name="policy", base_url="http://127.0.0.1:8001/v1", api_key="x")]

    async def setup(self) -> None:
        self.train_games = make_games(self.config.train_size, seed=self.config.seed, evaluation=False)
        self.eval_games = make_games(self.config.eval_size, seed=self.config.seed, evaluation=True)
        self.rng = random.Random(self.config.seed)

    async def get_next_item(self) -> Game:
        return self.rng.choice(self.train_games)

    async def play(self, game: Game, temperature: float | None = None) -> tuple[Episode, Conversation]:
        conversation = Conversation(game)
        episode = await run_episode(
            self.policy,
            opening(game),
            conversation.reply,
            max_turns=QUESTIONS,
            discount_factor=1.0,
            max_tokens=MAX_TOKENS,
            temperature=temperature,
        )
        return episode, conversation

    async def collect_trajectories(self, item: Game) -> tuple[ScoredDataGroup | None, list[Any]]:
        import asyncio

        played = await asyncio.gather(*(self.play(item) for _ in range(self.config.group_size)))
        self.all_right.extend(1.0 if c.right == QUESTIONS else 0.0 for _, c in played)
        return episodes_to_group([episode for episode, _ in played]), []

    async def evaluate(self, *args: Any, **kwargs: Any) -> dict[str, float]:
        from hermes_rl_mcp.sdk.concurrency import gather_bounded

        played = await gather_bounded((self.play(game, 0.0) for game in self.eval_games), self.config.max_eval_workers)
        metrics = {
            "eval/percent_correct": sum(c.right == QUESTIONS for _, c in played) / len(played),
            "eval/answers_right": sum(c.right for _, c in played) / (QUESTIONS * len(played)),
        }
        await self.wandb_log(metrics)
        return metrics

    async def wandb_log(self, wandb_metrics: dict[str, float] | None = None) -> None:
        metrics = dict(wandb_metrics or {})
        if self.all_right:
            metrics["train/percent_correct"] = sum(self.all_right) / len(self.all_right)
            self.all_right = []
        await super().wandb_log(metrics)


if __name__ == "__main__":
    WhoseTurnEnv.cli()
