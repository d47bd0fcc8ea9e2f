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

import numpy as np

LINK_CHARACTERS = " ,-_/&()"
TIGHT_LINKS = ".:"  # a link only alone between two words: otherwise a sentence's or a clause's end
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


def find_phrases(tokens: Sequence[int], is_word_char: np.ndarray, is_link_char: np.ndarray, tight_links: Sequence[int] = ()) -> list[list[Span]]:
    """Every phrase of ``tokens`` (token ids; ``is_word_char`` and ``is_link_char`` say which
    ids are letters and digits, and which link words; ``tight_links`` are the ids of
    ``TIGHT_LINKS``), as its words' spans in reading order; a word linked to neither neighbour
    is a phrase of one word."""
    phrases: list[list[Span]] = []
    for span in word_spans(tokens, is_word_char):
        if phrases:
            gap = tokens[phrases[-1][-1][1] : span[0]]
            if (len(gap) <= MAX_LINK and all(is_link_char[token] for token in gap)) or (len(gap) == 1 and gap[0] in tight_links):
                phrases[-1].append(span)
                continue
        phrases.append([span])
    return phrases


def find_records(text: str, min_items: int) -> list[list[list[Span]]]:
    """The lists of records in ``text`` (one character per token): ``min_items`` or more items
    in a row within a clause, split at commas or at "and" / "or", each of two or more words,
    and either all holding a number or none ("Ann 7, Bob 9 and Cy 5", "milk $2.49, bread
    $1.99, eggs $3.20"). Each list is given as its keys: each item's first word, and, where it
    differs, each item's words before its first number ("ice cream" of "ice cream $3.20")."""
    found: list[list[list[Span]]] = []
    for clause in _CLAUSE.finditer(text):
        items = []
        at = clause.start()
        for part in [*_SEPARATOR.finditer(clause.group()), None]:
            stop = clause.end() if part is None else clause.start() + part.start()
            words = [(at + m.start(), at + m.end()) for m in _WORD.finditer(text[at:stop])]
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
                found.append([firsts] if leading == firsts else [firsts, leading])
            run = [item] if len(item[0]) >= 2 else []
    return found


_CLAUSE = re.compile(r"(?:[^.?!;:\n]|\.(?=\d))+")  # a point between digits is a decimal point, not a break
_SEPARATOR = re.compile(r"\s*,\s*(?:(?:and|or)\s+)?|\s+(?:and|or)\s+")
_WORD = re.compile(r"[A-Za-z0-9]+")
