"""Lists in a prompt: three or more words joined, each to the next, by the same separator with a
comma in it ("pear, fig, kiwi" or "3,1,2", but not "fig and kiwi"), the last of them perhaps
after "and" or "or" ("pear, fig and kiwi", "pear, fig, or kiwi"), as people write lists.

Prompts give lists to sort, reverse, filter or count. The policy reads a list's items in order
(``model.py``: which item comes first, or last, among those not yet written, by their text and
by their length) and exploration offers them reordered (``exploration.py``); both find them
here.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np

from hermes_rl_mcp.trainer.phrases import word_spans
from hermes_rl_mcp.trainer.tokenizer import CharTokenizer

MIN_ITEMS = 3  # two words with a comma between them are as often two clauses' ends as a list
LAST_ITEM_WORDS = ("and", "or")  # a list's last item may follow one of these, after a space or a comma


@dataclass(frozen=True)
class TokenList:
    """One list: its items as (start, stop) token spans, in reading order, and the tokens that
    join each item to the next."""

    items: tuple[tuple[int, int], ...]
    join: tuple[int, ...]

    def ranks(self, tokens: Sequence[int], tokenizer: CharTokenizer) -> list[int]:
        """Each item's place in order, 0 for the first: numbers by value when every item is a
        number, else words alphabetically (ignoring case); equal items by reading order."""
        texts = [tokenizer.decode(list(tokens[start:stop])) for start, stop in self.items]
        numbers = all(text.isdigit() for text in texts)
        keys = [(int(text), "") if numbers else (0, text.lower()) for text in texts]
        return _places(keys)

    def length_ranks(self) -> list[int]:
        """Each item's place in order of length (in characters), 0 for the shortest; items of
        equal length by reading order."""
        return _places([stop - start for start, stop in self.items])


def _places(keys: Sequence[Any]) -> list[int]:
    """Each key's place among ``keys`` sorted (a stable sort: equal keys by their order)."""
    ranks = [0] * len(keys)
    for rank, k in enumerate(sorted(range(len(keys)), key=keys.__getitem__)):
        ranks[k] = rank
    return ranks


def find_lists(
    tokens: Sequence[int], is_word_char: np.ndarray, comma: int, words: list[tuple[int, int]] | None = None,
    *, last_item_words: Sequence[Sequence[int]], space: int,
) -> list[TokenList]:
    """The lists of ``tokens`` (token ids; ``is_word_char`` says which ids are letters and
    digits, ``comma`` is the comma's id; ``words``, when the caller has them, their
    ``word_spans``). A run of two or more words joined by the same separator takes one more
    item where one of ``last_item_words`` (``LAST_ITEM_WORDS`` as token ids) follows it after a
    ``space`` or after that separator, and a space and a word follow that."""
    if words is None:
        words = word_spans(tokens, is_word_char)
    joins = [tuple(tokens[a[1] : b[0]]) for a, b in zip(words, words[1:])]
    connectives = {tuple(word) for word in last_item_words}

    def before_last_item(k: int) -> bool:  # words[k] is "and" or "or", a space and a word after it
        return k + 1 < len(words) and joins[k] == (space,) and tuple(tokens[words[k][0] : words[k][1]]) in connectives

    found: list[TokenList] = []
    first = 0
    for end in range(1, len(words) + 1):
        if end < len(words) and comma in joins[end - 1] and joins[end - 1] == joins[first] and not before_last_item(end):
            continue
        items = words[first:end]
        if len(items) >= 2 and comma in joins[first] and end < len(words) and before_last_item(end) and joins[end - 1] in ((space,), joins[first]):
            items.append(words[end + 1])  # "pear, fig and kiwi", "pear, fig, or kiwi"
        if len(items) >= MIN_ITEMS:
            found.append(TokenList(tuple(items), joins[first]))
        first = end
    return found
