"""Runs a multi-turn chat episode turn by turn and turns it into one training sequence.

The policy's chat template is prefix-consistent: the prompt of turn k+1 starts with the prompt
of turn k followed by the reply of turn k. So the whole episode is one token sequence, the last
prompt plus the last reply, in which only the assistant's reply tokens are trained on (mask =
token id) and everything the environment said is masked out (-100). A policy whose template
breaks that property would silently train on the wrong tokens, so it is checked every turn.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from hermes_rl_mcp.errors import HermesRLError
from hermes_rl_mcp.sdk.env_types import PROMPT_LOGPROB, PROMPT_MASK, ScoredDataGroup

if TYPE_CHECKING:
    from hermes_rl_mcp.sdk.policy_client import PolicyClient


class PrefixMismatchError(HermesRLError, RuntimeError):
    """The policy's prompt tokens for a turn do not extend the previous turn's sequence."""


@dataclass
class TurnOutcome:
    """What the environment answers to one assistant reply."""

    reward: float
    next_message: str | None  # None ends the episode


@dataclass
class Episode:
    tokens: list[int] = field(default_factory=list)
    masks: list[int] = field(default_factory=list)
    logprobs: list[float] = field(default_factory=list)
    messages: list[dict[str, str]] = field(default_factory=list)
    rewards: list[float] = field(default_factory=list)
    discounted_return: float = 0.0

    @property
    def turns(self) -> int:
        return len(self.rewards)


def discounted_return(rewards: list[float], discount_factor: float) -> float:
    """sum_t discount_factor**t * reward_t, t counted from 0 at the first turn."""
    return sum(reward * discount_factor**t for t, reward in enumerate(rewards))


def _extend_to(episode: Episode, prompt_token_ids: list[int], turn: int) -> None:
    """Append the new prompt tokens (environment text and template tokens) as masked positions."""
    known = len(episode.tokens)
    if prompt_token_ids[:known] != episode.tokens:
        raise PrefixMismatchError(
            f"turn {turn}: the prompt's first {known} token ids differ from the episode so far; "
            "the policy's chat template must be prefix-consistent for multi-turn training"
        )
    added = prompt_token_ids[known:]
    episode.tokens.extend(added)
    episode.masks.extend([PROMPT_MASK] * len(added))
    episode.logprobs.extend([PROMPT_LOGPROB] * len(added))


async def run_episode(
    policy: PolicyClient,
    first_message: str,
    step: Callable[[str], TurnOutcome],
    *,
    max_turns: int,
    discount_factor: float,
    max_tokens: int = 8,
    temperature: float | None = None,
) -> Episode:
    """Play one episode: the user says ``first_message``, then each assistant reply goes to
    ``step`` which returns the turn's reward and the next user message (None to stop)."""
    episode = Episode(messages=[{"role": "user", "content": first_message}])
    for turn in range(max_turns):
        group = await policy.chat(episode.messages, n=1, max_tokens=max_tokens, temperature=temperature)
        reply = group.completions[0]
        _extend_to(episode, group.prompt_token_ids, turn)
        episode.tokens.extend(reply.token_ids)
        episode.masks.extend(reply.token_ids)
        episode.logprobs.extend(reply.logprobs)
        episode.messages.append({"role": "assistant", "content": reply.text})
        outcome = step(reply.text)
        episode.rewards.append(float(outcome.reward))
        if outcome.next_message is None:
            break
        episode.messages.append({"role": "user", "content": outcome.next_message})
    episode.discounted_return = discounted_return(episode.rewards, discount_factor)
    return episode


def episodes_to_group(episodes: list[Episode], scores: list[float] | None = None, include_messages: bool = False) -> ScoredDataGroup:
    """A scored group of whole episodes; the score of each defaults to its discounted return."""
    values = [e.discounted_return for e in episodes] if scores is None else scores
    group: dict[str, Any] = {
        "tokens": [e.tokens for e in episodes],
        "masks": [e.masks for e in episodes],
        "inference_logprobs": [e.logprobs for e in episodes],
        "scores": [float(v) for v in values],
    }
    if include_messages:
        group["messages"] = [e.messages for e in episodes]
    return group
