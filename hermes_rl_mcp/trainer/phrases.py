"""Phrases in a prompt: runs of words joined, each to the next, by a short link of spaces,
commas, hyphens, underscores, slashes, ampersands or brackets ("Laura Jean Patel", "big red
dog", "pear, fig", "(415) 555-0132"), or by a lone point or colon between them ("415.555",
"10:30"), and broken by anything else ("Initials of: green apple" is two phrases, "Patel?
Write" too). And lists of records ("Ann 7, Bob 9 and Cy 5"), found by their commas.

Many answers walk a phrase word by word: a name's initials, its words joined another way
("big_red_dog"), its words in reverse order. The policy reads which word comes before and
after each word (``model.py``: "the word after the one whose initial I just wrote" is one
weight), and exploration offers a phrase's words rewritten and a list of records' keys
reordered (``exploration.py``); both find them here.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import NamedTuple

import numpy as np

LINK_CHARACTERS = " ,-_/&()"
TIGHT_LINKS = ".:"  # a link only alone between two words: otherwise a sentence's or a clause's end
MAX_LINK = 3  # a longer run of spaces and commas is layout, not a link

Span = tuple[int, int]


def word_spans(tokens: Sequence[int], is_word_char: np.ndarray) -> list[Span]:
    """The (start, stop) of each word of ``tokens`` (a maximal run of letters and digits)."""
    return true_runs(is_word_char[np.asarray(tokens, dtype=np.int64)])


def true_runs(mask: np.ndarray) -> list[Span]:
    """The (start, stop) of each maximal run of True in ``mask`` (this runs several times per
    prompt read: written without ``np.r_`` and ``np.diff``, which cost more than the work)."""
    padded = np.zeros(len(mask) + 2, dtype=bool)
    padded[1:-1] = mask
    edges = np.flatnonzero(padded[1:] != padded[:-1])
    return list(zip(edges[::2].tolist(), edges[1::2].tolist()))


def find_phrases(tokens: np.ndarray, spans: list[Span], is_link_char: np.ndarray, is_tight_link: np.ndarray) -> list[list[Span]]:
    """Every phrase of ``tokens`` (token ids) whose words are ``spans`` (``word_spans``), as its
    words' spans in reading order; a word linked to neither neighbour is a phrase of one word
    (``is_link_char`` and ``is_tight_link`` say which ids are of ``LINK_CHARACTERS`` and of
    ``TIGHT_LINKS``)."""
    if not spans:
        return []
    starts, stops = np.asarray(spans).T
    joined = linked_gaps(tokens, stops[:-1], starts[1:], is_link_char, is_tight_link)
    phrases = [[spans[0]]]
    for span, link in zip(spans[1:], joined.tolist()):
        if link:
            phrases[-1].append(span)
        else:
            phrases.append([span])
    return phrases


def linked_gaps(tokens: np.ndarray, begins: np.ndarray, ends: np.ndarray, is_link_char: np.ndarray, is_tight_link: np.ndarray) -> np.ndarray:
    """Whether each gap between two words, ``tokens[begins[k]:ends[k]]``, links them into one
    phrase."""
    links_before = np.zeros(len(tokens) + 1, dtype=np.int64)
    np.cumsum(is_link_char[tokens], out=links_before[1:])
    lengths = ends - begins
    all_links = links_before[ends] - links_before[begins] == lengths
    tight = (lengths == 1) & is_tight_link[tokens[begins]]
    return ((lengths <= MAX_LINK) & all_links) | tight


class Records(NamedTuple):
    """One list of records: its keys (each item's first word, and, where it differs, each
    item's words before its first number: "ice cream" of "ice cream $3.20"), and each item's
    span from its first word to its last ("ice cream $3.20")."""

    keys: list[list[Span]]
    items: list[Span]


def find_records(text: str, min_items: int) -> list[Records]:
    """The lists of records in ``text`` (one character per token): ``min_items`` or more items
    in a row within a clause, split at commas or at "and" / "or", each of two or more words,
    and either all holding a number or none ("Ann 7, Bob 9 and Cy 5", "milk $2.49, bread
    $1.99, eggs $3.20")."""
    found: list[Records] = []
    for clause in _CLAUSE.finditer(text):
        items = []
        at = clause.start()
        for part in [*_SEPARATOR.finditer(clause.group()), None]:
            stop = clause.end() if part is None else clause.start() + part.start()
            words = [(at + m.start(), at + m.end()) for m in WORD.finditer(text[at:stop])]
            numbered = [text[a:b].isdigit() for a, b in words]
            items.append((words, any(numbered), numbered.index(True) if any(numbered) else len(words)))
            at = None if part is None else clause.start() + part.end()
        run: list[tuple[list[Span], bool, int]] = []
        for item in [*items, ([], False, 0)]:
            if len(item[0]) >= 2 and (not run or item[1] == run[0][1]):
                run.append(item)
                continue
            if len(run) >= min_items:
                firsts = [words[0] for words, _, _ in run]
                leading = [(words[0][0], words[max(lead, 1) - 1][1]) for words, _, lead in run]
                spans = [(words[0][0], words[-1][1]) for words, _, _ in run]
                found.append(Records([firsts] if leading == firsts else [firsts, leading], spans))
            run = [item] if len(item[0]) >= 2 else []
    return found


# a point or a colon before a digit is a decimal point or a time's ("12.4", "10:30"), not a break
_CLAUSE = re.compile(r"(?:[^.?!;:\n]|[.:](?=\d))+")
_SEPARATOR = re.compile(r"\s*,\s*(?:(?:and|or)\s+)?|\s+(?:and|or)\s+")
WORD = re.compile(r"[A-Za-z0-9]+")  # a word, as the tokenizer's letters and digits make one
