"""Phrases in a prompt: runs of words joined, each to the next, by a short link of spaces,
commas, hyphens, underscores, slashes or ampersands ("Laura Jean Patel", "big red dog",
"pear, fig"), and broken by any other character ("Initials of: green apple" is two phrases,
"Patel? Write" too).

Many answers walk a phrase word by word: a name's initials, its words joined another way
("big_red_dog"), its words in reverse order. The policy reads which word comes before and
after each word (``model.py``: "the word after the one whose initial I just wrote" is one
weight), and exploration offers the initials of a phrase's words (``exploration.py``); both
find them here.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

LINK_CHARACTERS = " ,-_/&"
MAX_LINK = 3  # a longer run of spaces and commas is layout, not a link

Span = tuple[int, int]


def word_spans(tokens: Sequence[int], is_word_char: np.ndarray) -> list[Span]:
    """The (start, stop) of each word of ``tokens`` (a maximal run of letters and digits)."""
    spans: list[Span] = []
    start = -1
    for at, token in enumerate([*tokens, -1]):
        inside = token >= 0 and bool(is_word_char[token])
        if inside and start < 0:
            start = at
        elif not inside and start >= 0:
            spans.append((start, at))
            start = -1
    return spans


def find_phrases(tokens: Sequence[int], is_word_char: np.ndarray, is_link_char: np.ndarray) -> list[list[Span]]:
    """Every phrase of ``tokens`` (token ids; ``is_word_char`` and ``is_link_char`` say which
    ids are letters and digits, and which link words), as its words' spans in reading order; a
    word linked to neither neighbour is a phrase of one word."""
    phrases: list[list[Span]] = []
    for span in word_spans(tokens, is_word_char):
        if phrases:
            gap = tokens[phrases[-1][-1][1] : span[0]]
            if len(gap) <= MAX_LINK and all(is_link_char[token] for token in gap):
                phrases[-1].append(span)
                continue
        phrases.append([span])
    return phrases


def record_keys(tokens: Sequence[int], phrase: list[Span], comma: int, min_items: int) -> list[tuple[list[Span], tuple[int, ...]]]:
    """The lists of records in ``phrase``: ``min_items`` or more items in a row, split where a
    link holds a comma, each of the same two or more words ("Ann 7, Bob 9, Cy 5", "Ana 165 cm,
    Ben 172 cm, ..."), as each item's first word (its key) and the link that joins the items."""
    items: list[list[Span]] = [[phrase[0]]]
    joins: list[tuple[int, ...]] = []
    for before, word in zip(phrase, phrase[1:]):
        link = tuple(tokens[before[1] : word[0]])
        if comma in link:
            items.append([word])
            joins.append(link)
        else:
            items[-1].append(word)
    found: list[tuple[list[Span], tuple[int, ...]]] = []
    first = 0
    for end in range(1, len(items) + 1):
        if end < len(items) and len(items[end]) == len(items[first]) and joins[end - 1] == joins[first]:
            continue
        if end - first >= min_items and len(items[first]) >= 2:
            found.append(([item[0] for item in items[first:end]], joins[first]))
        first = end
    return found
