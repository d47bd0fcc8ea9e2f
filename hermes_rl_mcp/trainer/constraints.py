"""Constrained decoding to a list of strings (the ``guided_choice`` request field, as in vLLM).

At every step the policy server masks the tokens that would leave every allowed string, and
allows the end token only where a string is complete; the logprobs it returns are those of the
masked distribution it sampled from. A scored group carries the constraint in its
``generation_params``, and the trainer masks the same tokens when it recomputes logprobs, so the
importance ratio compares like with like (unmasked, every ratio would sit below 1 by the mass
of the masked-out tokens, and PPO-clip would then ignore most negative advantages).
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache
from typing import Any

import numpy as np

from hermes_rl_mcp.errors import HermesRLError
from hermes_rl_mcp.trainer.tokenizer import END, UNK, CharTokenizer

MAX_CHOICES = 1024
MAX_CHOICE_CHARS = 256
MAX_TOTAL_CHARS = 32768  # bounds the trie a request can make the server build


class ConstraintError(HermesRLError, ValueError):
    """A constraint that cannot be applied; the message says what is wrong and what is valid."""


class ChoiceConstraint:
    """The token-level trie of the allowed strings, each followed by the end token."""

    def __init__(self, choices: Sequence[str], tokenizer: CharTokenizer) -> None:
        if isinstance(choices, str) or not isinstance(choices, Sequence) or not choices:
            raise ConstraintError("guided_choice must be a non-empty list of strings")
        if len(choices) > MAX_CHOICES:
            raise ConstraintError(f"guided_choice has {len(choices)} strings; at most {MAX_CHOICES} are allowed")
        total = sum(len(c) for c in choices if isinstance(c, str))
        if total > MAX_TOTAL_CHARS:
            raise ConstraintError(f"guided_choice has {total} characters in all; at most {MAX_TOTAL_CHARS} are allowed")
        self.vocab_size = tokenizer.vocab_size
        children: list[dict[int, int]] = [{}]  # trie node -> next token -> child node; node 0 is the root
        for index, choice in enumerate(choices):
            if not isinstance(choice, str) or not choice:
                raise ConstraintError(f"guided_choice[{index}] must be a non-empty string, got {choice!r}")
            if len(choice) > MAX_CHOICE_CHARS:
                raise ConstraintError(f"guided_choice[{index}] has {len(choice)} characters; at most {MAX_CHOICE_CHARS}")
            ids = tokenizer.encode(choice)
            if UNK in ids:
                raise ConstraintError(
                    f"guided_choice[{index}] has characters the policy cannot produce; use printable ASCII, tab or newline"
                )
            node = 0
            for token in (*ids, END):
                child = children[node].get(token)
                if child is None:
                    child = len(children)
                    children[node][token] = child
                    children.append({})
                node = child
        self._children = children
        self._tokens = [np.fromiter(sorted(next_tokens), dtype=np.int64) for next_tokens in children]

    def allowed(self, generated: Sequence[int]) -> np.ndarray | None:
        """Boolean mask of the tokens allowed after ``generated`` (the turn so far), or None when
        ``generated`` has already left every allowed string."""
        node: int | None = 0
        for token in generated:
            node = self._children[node].get(int(token))
            if node is None:
                return None
        if not self._tokens[node].size:
            return None  # past the end token
        mask = np.zeros(self.vocab_size, dtype=bool)
        mask[self._tokens[node]] = True
        return mask


@lru_cache(maxsize=8)
def choice_constraint(choices: tuple[str, ...], tokenizer: CharTokenizer) -> ChoiceConstraint:
    """A shared, cached constraint: an environment sends the same list with every request."""
    return ChoiceConstraint(choices, tokenizer)


def constraint_from_params(params: Any, tokenizer: CharTokenizer) -> ChoiceConstraint | None:
    """The constraint a scored group's ``generation_params`` records, if any."""
    if not isinstance(params, dict) or params.get("guided_choice") is None:
        return None
    choices = params["guided_choice"]
    if not isinstance(choices, list) or not all(isinstance(c, str) for c in choices):
        raise ConstraintError("generation_params.guided_choice must be a list of strings")
    return choice_constraint(tuple(choices), tokenizer)
