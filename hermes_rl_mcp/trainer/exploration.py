"""Exploration: some training samples are replaced by an answer the policy would rarely sample.

A policy trained from scratch finds an answer only by sampling it, and once it has settled on
one answer for every prompt, a rival answer can sit tens of nats below it and is never sampled
again: the groups where the rival was right then all score alike and teach nothing. So while a
run trains, each sample is, with a small probability, replaced by one of eight kinds of answer,
followed by the end token:

* **words of the prompt**: many short text tasks answer with a word the prompt already holds
  (a label it offers, a name or number it mentions), or with two of its words joined or
  reordered. Half the time one word, half the time two words in either order, or one word
  twice (when two fit), from the prompt's last message (or the conversation's first, which
  often states the task, or the user's message before the last). Half the time every word is
  as likely as any other; the other half, a word is drawn in proportion to how rare it is among
  the prompts seen (``WordFrequencies``: a word every prompt holds is the task's fixed wording),
  and two such words are joined with a space or with nothing. An answer is most often built
  from what the prompt says about this item (a name, a code, a letter): a prompt of twenty
  words makes four hundred pairs, and the few words that change from prompt to prompt make
  most of the rare ones;
* **sums and differences of the prompt's numbers**: many tasks answer with a number the prompt
  does not hold but that two of its numbers make (a total, a difference, a double). Where the
  prompt holds numbers, a third of these replacements are one such number, every candidate as
  likely as any other: the number path's value starts at 0, or at the number itself, and an
  answer dozens away from it is otherwise never sampled, so it never scores and nothing is
  learned;
* **a list of the prompt's, reordered**: many tasks answer by putting the items of a list the
  prompt gives (words or numbers joined by commas, the last perhaps by "and") in some order
  (sorted, reversed, by a rule the task knows), or by putting the keys of a list of records in
  some order (the names of "Ann 7, Bob 9 and Cy 5", by their scores: ``phrases.find_records``).
  Where the prompt holds such a list, a third of these replacements are its items (or keys)
  reordered, joined as the list joins them (keys by a comma and a space): half of them in a
  random order, half in one of the orders lists are most often asked for (``orders``: by the
  numbers the items hold, alphabetically, by length, from either end, or reversed). The policy
  writes one character at a time, and a whole list in a new order is otherwise never sampled,
  so it never scores;
* **an item of a list of the prompt's**: many tasks answer by picking one item of a list the
  prompt gives (the vegetarian dish of a menu, the odd one out), often an item of several words
  ("tomato soup"). Where the prompt holds a list, a quarter of the replacements left after the
  reordered lists are one of its items (``ITEM_SHARE``);
* **a phrase rewritten**: many tasks answer by walking a run of the prompt's words: their
  initials (a name's, an acronym), or the words themselves joined another way, in reverse
  order, or in another case ("big_red_dog", "runs fox red"). Where the prompt holds a phrase
  (``phrases.find_phrases``) of two or more words, a sixth of these replacements take two to
  four of its words in a row (drawn evenly, or by the rarity of their words, the product) and
  write, half the time, their initials, a quarter the words in reverse order, and a quarter
  the words joined by nothing or by one of ``JOINERS`` the prompt holds, as they are, in
  lowercase or in capitals: such an answer is otherwise sampled only letter by letter;
* **a run of a phrase's words as written**: a name, a dish or a time of several words ("Anna
  Berg", "10:30 am") is, as two of the prompt's words drawn from all their pairs, a few in a
  thousand of the replacements. Where the prompt holds a phrase of two or more words, a quarter
  of the replacements left after the lists, rewrites and sums are two to four of its words in a
  row with what stands between them (``SPAN_SHARE``), drawn evenly or, half the time, by the
  geometric mean of their words' rarities, so a run of rare words comes before one that adds
  the task's fixed wording to them;
* **words of the prompt in another case**: a quarter of the replacements by words or pairs of
  words write them in another case (``CASE_SHARE``), since many tasks restate the prompt's
  words so;
* **an answer that scored on another prompt**: many tasks answer from a small set (labels,
  counts, small numbers) that the prompt need not hold. An answer that scored above its group
  once is offered to other prompts, so an answer the policy has stopped sampling for some
  prompts is tried on them again (``RewardedAnswers``: the learner fills it, the sampler reads
  it).

And one sample of each request is **forked** by a word: the same reply with one of its words
replaced by a word of the prompt, the rest kept (``_word_forked``), so a reply right but for
one word (a file's old extension where the new one was asked for) has that near rival in its
group. A request whose samples are all one reply gets a second fork, by a character: the same
reply changed at one position drawn evenly, its end token included, to a character of the
prompt's last message or to the end token, then written on by the policy (``_forked``). Such a
group scores alike and is dropped before training, so a reply the policy is sure of is never
corrected however near the right one is (one character more before the end, one character
other); the fork is that near reply, and where it scores above the rest the group teaches.

Nothing here knows a task. The replaced sample carries its logprobs under the current policy
(as if the policy had sampled it), so the trainer's importance ratio starts at 1. Such a sample
is evidence for an answer when it scores above its group, and is trained on like any other;
below its group it is no evidence against anything the policy does (the policy did not choose
it), and pushing it down would also push the policy away from the prompt's words it must learn
to transform or reorder. So the sampler records the turns it explored (``ExploredTurns``) and
the learner gives them no gradient from a negative advantage. Greedy requests, and the requests
an environment makes while it evaluates (``PURPOSE_HEADER``), are never explored.

The shares above are where a run starts. The sampler also records each explored turn's kind
(a word, a pair, each in another case or not, a sum, a list, an item, a span, each form of
rewrite), the learner credits each kind with how often its turns scored above their group, and
each kind is then offered in proportion to its share plus that record (``_kind_chances``): one
form of rewrite among six starts at a fraction of a percent of the replacements, and the task
that asks for it would otherwise see it a few times in a run. And while explored samples are
what make the groups that teach, and most groups teach nothing, the sampler explores more, up
to ``MAX_BOOST`` times the shares (``ExploredTurns.boost``).
"""

from __future__ import annotations

import hashlib
import re
import threading
from collections import OrderedDict
from collections.abc import Sequence
from itertools import groupby
from typing import Any, NamedTuple

import numpy as np

from hermes_rl_mcp.trainer.constraints import ChoiceConstraint
from hermes_rl_mcp.trainer.grpo import TokenBatch
from hermes_rl_mcp.trainer.lists import MIN_ITEMS
from hermes_rl_mcp.trainer.model import PolicyModel, earlier_message_bounds, first_message_bounds, last_message_bounds
from hermes_rl_mcp.trainer.numbers import MAX_NUMBERS, NUMBER_RANGE
from hermes_rl_mcp.trainer.phrases import WORD, find_records, word_spans
from hermes_rl_mcp.trainer.sampling import Generation, SampleJob, generate_batch
from hermes_rl_mcp.trainer.tokenizer import END

# Of the samples replaced by the prompt's words, the share given two words rather than one
# (when two fit): answers that join or reorder words of the prompt.
PHRASE_SHARE = 0.5
# Of those replacements, where the prompt holds numbers, the share given a sum or a difference
# of two of them instead.
SUM_SHARE = 1 / 3
# Of those replacements, where the prompt holds a list, the share given its items reordered.
LIST_SHARE = 1 / 3
# Of the reordered lists, the share put in one of the orders lists are most often asked for
# (``orders``: by the numbers the items hold, alphabetically, by length, from either end, or
# reversed) rather than in a random one: of five items a random order is the one asked for once
# in 120 draws, one of these orders once in about seven.
SORTED_SHARE = 1 / 2
NUMBER = re.compile(r"\d+(?:\.\d+)?")
# Of those replacements, where the prompt holds a list, the share given one of its items (after
# the reordered lists): a task that picks an item ("the vegetarian dish", "the odd one out")
# answers with one item of a list the prompt gives, often of several words ("tomato soup"),
# which as a pair of the prompt's words is one draw in hundreds.
ITEM_SHARE = 1 / 4
# How the rare-word pairs are joined: as words, or as the parts of one (a code, initials).
JOINS = (" ", "")
# Of the replacements by words or pairs of words, the share drawn by rarity (once enough prompts
# have been seen to tell): the rest are drawn evenly, since a label the task offers is in every
# prompt.
RARE_SHARE = 0.5
# Of the replacements by words or pairs of words, the share written in another case (all
# lowercase, all capitals, every letter's case swapped, or the first letter's): an answer that
# restates the prompt's words in another case (a name capitalised, a code in capitals) is
# otherwise sampled only letter by letter, each through the case switch.
CASE_SHARE = 0.25
# Of those replacements, where the prompt holds a phrase of two or more words, the share given
# some of its words in a row (two to MAX_RUN) rewritten: their initials, or the words rejoined.
REWRITE_SHARE = 1 / 6
MAX_RUN = 4
JOINERS = "_-./"  # the characters a rewrite joins words by, when the prompt holds them
# The kinds of rewrite, and the share of the rewrites each takes.
# (Words joined by nothing or by a joiner, each as they are, in lowercase or in capitals.)
JOINED = tuple(f"{join}{case}" for join in ("joined", "linked") for case in ("", "_lower", "_upper"))
REWRITES = {"initials": 0.5, "reversed": 0.25, **{kind: 0.25 / len(JOINED) for kind in JOINED}}
# Of those replacements (after lists, rewrites and sums), the share given a run of two to
# MAX_RUN words of a phrase as the message writes it ("Anna Berg", "lentil soup", "10:30 am"):
# many answers are a name, a dish or a time of several words the prompt holds whole, and as two
# words drawn from all the prompt's pairs such a span is a few in a thousand of the replacements.
# Drawn half the time by the geometric mean of its words' rarities, so a run of rare words comes
# before one that adds the task's fixed wording to them.
SPAN_SHARE = 1 / 4
# The chance that a request gets a sample forked by a word (``_word_forked``) and, when its
# samples are all one reply, another by a character (``_forked``): always, since a group of one
# reply teaches nothing otherwise, and a reply wrong by one word seldom has its rival sampled.
FORK_SHARE = 1.0
# Each kind of replacement is offered in proportion to its share above plus its recent record:
# the share of its samples trained on that scored above their group, counted as if PRIOR_TRIES
# more had not. A kind that finds this task's answers takes a large part of the exploration
# however small its share (half of its samples scoring: about a third of the replacements),
# and the others keep theirs. The counts decay by CREDIT_DECAY per explored turn trained on (a
# horizon of about 30 steps of 64 samples).
PRIOR_TRIES = 8.0
CREDIT_DECAY = 0.995
# While exploration is what makes the groups that teach, it is offered more. A group whose
# samples all score alike teaches nothing and is dropped before training; where the policy's own
# samples seldom score, most groups are dropped and a step samples many groups for each one it
# trains on (sixteen per kept group on a conversation whose answer is a name said turns before,
# at a share of 0.1). The sampler then explores up to MAX_BOOST times its shares: by the square
# root of the samples served per turn trained on, weighed by the share of the turns that scored
# above their group that were explored (taken as all of them before any batch has scored: a
# policy trained from scratch finds nothing by itself at first). Once the policy's own samples
# score, that share falls and so does the boost. Both measures are smoothed over batches by
# BOOST_MEMORY.
MAX_BOOST = 4.0
BOOST_MEMORY = 0.8
KINDS = ("list", "sorted", "item", *REWRITES, "sum", "span", "pair", "pair_cased", "word", "word_cased", "rewarded", "fork")
PROMPTS_BEFORE_RARITY = 16


class ExploredTurns:
    """The most recent explored turns, each kept as a digest of its prompt and its tokens, with
    its kind (``KINDS``), and per kind how many explored turns were trained on and how many of
    them scored above their group. The sampler and the learner of a local run share one; old
    entries fall out, so it stays small (a batch is trained on within a few batches of being
    sampled)."""

    def __init__(self, capacity: int = 4096) -> None:
        self.capacity = capacity
        self._turns: OrderedDict[bytes, str] = OrderedDict()
        self._tries = dict.fromkeys(KINDS, 0.0)
        self._wins = dict.fromkeys(KINDS, 0.0)
        self._served = 0  # samples the sampler could have explored since the last batch was credited
        self._served_lock = threading.Lock()  # the sampler counts on the event loop, the learner reads in its thread
        self._waste = 1.0  # smoothed: samples served per turn trained on
        self._explored_wins = 1.0  # smoothed: the share of the turns scoring above their group that were explored

    @staticmethod
    def _key(prompt: Sequence[int], turn: Sequence[int]) -> bytes:
        digest = hashlib.blake2b(digest_size=16)
        digest.update(np.asarray(prompt, dtype=np.int32).tobytes())
        digest.update(b"|")
        digest.update(np.asarray(turn, dtype=np.int32).tobytes())
        return digest.digest()

    def add(self, prompt: Sequence[int], turn: Sequence[int], kind: str = "word") -> None:
        key = self._key(prompt, turn)
        self._turns[key] = kind
        self._turns.move_to_end(key)
        while len(self._turns) > self.capacity:
            self._turns.popitem(last=False)

    def kind(self, prompt: Sequence[int], turn: Sequence[int]) -> str | None:
        """The kind of the explored turn, or None when the turn was sampled."""
        return self._turns.get(self._key(prompt, turn))

    def served(self, samples: int) -> None:
        """Count samples the sampler served for training (explored or not)."""
        with self._served_lock:
            self._served += samples

    def credit(self, batch: TokenBatch) -> None:
        """Count the batch's explored turns per kind, and those whose sequence scored above its
        group; and update the boost's measures (``boost``)."""
        turns = batch.turn_starts()
        with self._served_lock:
            served, self._served = self._served, 0
        if turns and served:
            self._waste = BOOST_MEMORY * self._waste + (1 - BOOST_MEMORY) * served / len(turns)
        explored_wins: list[bool] = []  # per turn scoring above its group: whether it was explored
        for turn, _, advantage in turns:
            kind = self._turns.get(self._key(*batch.turns[turn]))
            if advantage > 0:
                explored_wins.append(kind is not None)
            if kind is None:
                continue
            for counts in (self._tries, self._wins):
                for name in counts:
                    counts[name] *= CREDIT_DECAY
            self._tries[kind] += 1.0
            self._wins[kind] += float(advantage > 0)
        if explored_wins:
            self._explored_wins = BOOST_MEMORY * self._explored_wins + (1 - BOOST_MEMORY) * float(np.mean(explored_wins))

    def records(self) -> dict[str, float]:
        """Each kind's recent record: the share of its samples that scored above their group
        (``PRIOR_TRIES``)."""
        return {kind: self._wins[kind] / (self._tries[kind] + PRIOR_TRIES) for kind in KINDS}

    def boost(self) -> float:
        """How many times its shares the sampler explores now (1 to ``MAX_BOOST``)."""
        return 1.0 + (min(self._waste**0.5, MAX_BOOST) - 1.0) * self._explored_wins if self._waste > 1 else 1.0

    def __len__(self) -> int:
        return len(self._turns)


class RewardedAnswers:
    """The most recent distinct answers (an assistant turn's tokens) that scored above their
    group, whatever their prompt. The learner of a local run adds them, the sampler offers them
    to other prompts; the two run in different threads, so both hold the lock (a read while an
    answer was added failed a sampling request with "OrderedDict mutated during iteration")."""

    def __init__(self, capacity: int = 64) -> None:
        self.capacity = capacity
        self._answers: OrderedDict[tuple[int, ...], None] = OrderedDict()
        self._lock = threading.Lock()

    def add_from(self, batch: TokenBatch) -> None:
        """Every turn of the batch's sequences whose advantage is positive."""
        for turn, _, advantage in batch.turn_starts():
            if advantage > 0:
                self.add(batch.turns[turn][1])

    def add(self, answer: Sequence[int]) -> None:
        key = tuple(int(token) for token in answer)
        with self._lock:
            self._answers[key] = None
            self._answers.move_to_end(key)
            while len(self._answers) > self.capacity:
                self._answers.popitem(last=False)

    def fitting(self, max_tokens: int, constraint: ChoiceConstraint | None) -> list[list[int]]:
        """The answers that fit ``max_tokens`` and the constraint."""
        with self._lock:
            answers = list(self._answers)
        return [list(a) for a in answers if len(a) <= max_tokens and _fits(list(a), constraint)]

    def __len__(self) -> int:
        return len(self._answers)


class WordFrequencies:
    """How many of the prompts explored so far hold each word (counted in hashed buckets, so it
    stays small however many distinct words a run sees; a rare word that shares a bucket with a
    common one only counts as common). The policy server keeps one per run."""

    def __init__(self, buckets: int = 4096) -> None:
        self.prompts = 0
        self.counts = np.zeros(buckets, dtype=np.int64)

    def _bucket(self, word: list[int]) -> int:
        return hash(tuple(word)) % len(self.counts)

    def add(self, words: list[list[int]]) -> None:
        """One prompt's distinct words."""
        self.prompts += 1
        self.counts[list({self._bucket(word) for word in words})] += 1

    def rarity(self, words: list[list[int]]) -> np.ndarray | None:
        """For each of ``words``, the number of prompts seen over the number that hold it: 1 for
        a word every prompt holds, 10 for one in a tenth of them (None until
        ``PROMPTS_BEFORE_RARITY`` prompts have been seen)."""
        if self.prompts < PROMPTS_BEFORE_RARITY:
            return None
        held = self.counts[[self._bucket(word) for word in words]]
        return self.prompts / np.maximum(held, 1)


def prompt_words(model: PolicyModel, prompt: Sequence[int], max_tokens: int, constraint: ChoiceConstraint | None) -> list[list[int]]:
    """The distinct words (maximal runs of letters and digits) of the prompt's last message, the
    conversation's first and the user's message before the last, each as token ids ending with
    the end token, that fit ``max_tokens`` and the constraint."""
    return _fitting(_singles(_words(model, prompt)), max_tokens, constraint)


def prompt_phrases(model: PolicyModel, prompt: Sequence[int], max_tokens: int, constraint: ChoiceConstraint | None) -> list[list[int]]:
    """Two words of the prompt (as ``prompt_words`` finds them), in either order, or one word
    twice, separated by a space, each as token ids ending with the end token, that fit
    ``max_tokens`` and the constraint."""
    return _fitting(_pairs(model, _words(model, prompt)), max_tokens, constraint)


def prompt_sums(model: PolicyModel, prompt: Sequence[int], max_tokens: int, constraint: ChoiceConstraint | None) -> list[list[int]]:
    """The sums of two of the prompt's first numbers (words of digits, as ``prompt_words`` finds
    them; a number with itself too, so its double) and the differences of two (the larger less
    the smaller), each as token ids ending with the end token, that fit ``max_tokens`` and the
    constraint."""
    return _fitting(_sums(model, _words(model, prompt)), max_tokens, constraint)


def _sums(model: PolicyModel, words: list[list[int]]) -> list[list[int]]:
    tokenizer = model.tokenizer
    texts = (tokenizer.decode(word) for word in words)
    numbers = [int(text) for text in texts if text.isascii() and text.isdigit()][:MAX_NUMBERS]
    found = {a + b for i, a in enumerate(numbers) for b in numbers[i:]}
    found |= {abs(a - b) for i, a in enumerate(numbers) for b in numbers[i + 1 :]}
    # only what the number path can spell: it is the part of the policy these teach
    return [[*tokenizer.encode(str(n)), END] for n in sorted(found) if n <= NUMBER_RANGE]


def _runs(model: PolicyModel, prompt: Sequence[int]) -> tuple[list[list[list[int]]], list[list[int]], list[int]]:
    """Every distinct run of two to ``MAX_RUN`` words in a row within a phrase of the messages
    ``_words`` reads (each run as its words' tokens), each run's text as the message writes it
    (the characters between its words kept), and the characters of ``JOINERS`` those messages
    hold (the joins a rewrite may use besides nothing)."""
    runs: dict[tuple[tuple[int, ...], ...], list[int]] = {}
    links: set[int] = set()
    joiners = set(model.tokenizer.encode(JOINERS))
    for message in _messages(prompt):
        links.update(token for token in message if token in joiners)
        for phrase in model.phrases(message):
            words = [tuple(message[start:stop]) for start, stop in phrase]
            for size in range(2, MAX_RUN + 1):
                for at in range(len(words) - size + 1):
                    runs.setdefault(tuple(words[at : at + size]), message[phrase[at][0] : phrase[at + size - 1][1]])
    return [[list(word) for word in run] for run in runs], list(runs.values()), sorted(links)


def _rewritten(model: PolicyModel, run: list[list[int]], kind: str, links: list[int], rng: np.random.Generator) -> list[int]:
    """``run`` rewritten as ``kind`` says (token ids ending with the end token): its initials;
    its words in reverse order with spaces between; or its words joined by nothing or by one of
    ``links`` (by nothing where there is none), as they are, in lowercase or in capitals."""
    if kind == "initials":
        return [*(word[0] for word in run), END]
    if kind == "reversed":
        space = model.tokenizer.encode(" ")
        return [*[token for k, word in enumerate(run[::-1]) for token in [*(space if k else []), *word]], END]
    join = [links[int(rng.integers(len(links)))]] if links and kind.startswith("linked") else []
    text = model.tokenizer.decode([token for k, word in enumerate(run) for token in [*(join if k else []), *word]])
    text = text.lower() if kind.endswith("_lower") else text.upper() if kind.endswith("_upper") else text
    return [*model.tokenizer.encode(text), END]


def _kind_chances(offers: dict[str, bool], rewrite_share: float, case_share: float, records: dict[str, float]) -> tuple[list[str], np.ndarray]:
    """The kinds of replacement by the prompt's words that the prompt ``offers``, and the chance
    of each: its share (the shares above, nested: a list, else a rewrite, else a sum, else a
    pair or a word, each in another case a share ``case_share`` of the time) plus its record
    (``ExploredTurns.records``), renormalised."""
    chances: dict[str, float] = {}
    rest = 1.0
    for kind, share in (("list", LIST_SHARE), ("item", ITEM_SHARE), ("rewrite", rewrite_share), ("sum", SUM_SHARE), ("span", SPAN_SHARE), ("pair", PHRASE_SHARE)):
        if offers[kind]:
            taken = rest * share
            if kind == "rewrite":
                chances.update({name: taken * part for name, part in REWRITES.items() if offers["links"] or not name.startswith("linked")})
            elif kind == "list":
                chances.update(list=taken * (1.0 - SORTED_SHARE), sorted=taken * SORTED_SHARE)
            else:
                chances[kind] = taken
            rest -= taken
    chances["word"] = rest
    for kind in ("pair", "word"):
        if kind in chances:
            chances[f"{kind}_cased"] = chances[kind] * case_share
            chances[kind] *= 1.0 - case_share
    kinds = [kind for kind, chance in chances.items() if chance > 0]
    weights = np.asarray([chances[kind] + records.get(kind, 0.0) for kind in kinds])
    return kinds, weights / weights.sum()


def _case_variants(model: PolicyModel, candidate: list[int]) -> list[list[int]]:
    """A candidate (token ids ending with the end token) in each other case it can be written
    in: all lowercase, all capitals, every letter's case swapped, the first letter's swapped."""
    tokenizer = model.tokenizer
    text = tokenizer.decode(candidate[:-1])
    variants = {text.lower(), text.upper(), text.swapcase(), text[:1].swapcase() + text[1:]} - {text}
    return [[*tokenizer.encode(variant), END] for variant in sorted(variants)]


def _singles(words: list[list[int]]) -> list[list[int]]:
    return [[*word, END] for word in words]


def _pairs(model: PolicyModel, words: list[list[int]], joins: tuple[str, ...] = (" ",)) -> list[list[int]]:
    joiners = [model.tokenizer.encode(join) for join in joins]
    return [[*a, *joiner, *b, END] for joiner in joiners for a in words for b in words]


# Candidates and the chance of drawing each (None: all alike).
Drawn = tuple[list[list[int]], np.ndarray | None]


def _rare(
    model: PolicyModel, words: list[list[int]], rarity: np.ndarray, max_tokens: int, constraint: ChoiceConstraint | None
) -> tuple[Drawn, Drawn]:
    """The prompt's words, and their pairs joined by a space or by nothing, each with the chance
    of drawing it: in proportion to its rarity (a pair's, the product of its words')."""
    singles = _singles(words)
    pairs = _pairs(model, words, JOINS)
    pair_weights = np.tile(np.outer(rarity, rarity).ravel(), len(JOINS))
    return _drawn(singles, rarity, max_tokens, constraint), _drawn(pairs, pair_weights, max_tokens, constraint)


def _drawn(candidates: list[list[int]], weights: np.ndarray, max_tokens: int, constraint: ChoiceConstraint | None) -> Drawn:
    """The candidates that fit, and the chance of drawing each, in proportion to ``weights``."""
    keep = [k for k, c in enumerate(candidates) if len(c) <= max_tokens and _fits(c, constraint)]
    chances = weights[keep]
    return [candidates[k] for k in keep], chances / chances.sum() if keep else chances


def _words(model: PolicyModel, prompt: Sequence[int]) -> list[list[int]]:
    """The distinct words of the messages the policy reads from their start (the prompt's last
    message and, in a conversation, its first and the user's message before the last), in
    reading order: each maximal run of letters and digits, and each run of characters between
    spaces whose inside holds other characters ("10:30am", "3.50", "e-mail", "O'Neil"), less
    the punctuation at its ends. Such a run is one item to the person who wrote it, and an
    answer that copies it is otherwise found only as words joined by each of its marks."""
    messages: list[int] = []
    for message in _messages(prompt):
        messages += [*message, END]
    tokenizer = model.tokenizer
    texts = [tokenizer.token_text(token) if token >= tokenizer.first_char_id else " " for token in messages]
    words: list[list[int]] = []
    for spaced, places in groupby(range(len(texts)), key=lambda k: not texts[k].isspace()):
        if not spaced:
            continue
        runs = [list(run) for alnum, run in groupby(places, key=lambda k: texts[k].isalnum()) if alnum]
        found = [messages[run[0] : run[-1] + 1] for run in runs]
        if len(runs) > 1:  # marks between its words: the whole run between spaces is a word too
            found.append(messages[runs[0][0] : runs[-1][-1] + 1])
        for word in found:
            if word not in words:
                words.append(word)
    return words


class PromptList(NamedTuple):
    """A list of the prompt's: its items' tokens, the tokens that join them, and each item's
    text as it is ordered by (a record's whole text, "Ann 7", where its key is "Ann")."""

    items: list[list[int]]
    join: list[int]
    texts: list[str]


def _lists(model: PolicyModel, prompt: Sequence[int]) -> list[PromptList]:
    """The lists (``lists.find_lists``) and the lists of records' keys (``find_records``) of the
    same messages."""
    join = model.tokenizer.encode(", ")
    found = []
    for message in _messages(prompt):
        text = "".join(model.tokenizer.token_text(token) if token >= model.tokenizer.first_char_id else "\0" for token in message)
        for listed in model.lists(message):
            found.append(PromptList([message[a:b] for a, b in listed.items], list(listed.join), [text[a:b] for a, b in listed.items]))
        for records in find_records(text, MIN_ITEMS):
            texts = [text[a:b] for a, b in records.items]
            found += [PromptList([message[a:b] for a, b in keys], list(join), texts) for keys in records.keys]
    return found


def _messages(prompt: Sequence[int]) -> list[list[int]]:
    """The tokens of each message the policy reads from its start, in reading order."""
    tokens = np.asarray(prompt, dtype=np.int64)
    bounds = sorted({first_message_bounds(tokens), earlier_message_bounds(tokens), last_message_bounds(tokens)})
    return [tokens[start:stop].tolist() for start, stop in bounds]


def _reordered(lists: list[PromptList], rng: np.random.Generator) -> list[int]:
    """One of ``lists`` with its items in a random order, as token ids ending with the end token."""
    listed = lists[int(rng.integers(len(lists)))]
    return _joined(listed, rng.permutation(len(listed.items)).tolist())


def _sorted(lists: list[PromptList], rng: np.random.Generator) -> list[int]:
    """One of ``lists`` in one of its orders (``orders``), as token ids ending with the end token."""
    listed = lists[int(rng.integers(len(lists)))]
    found = orders(listed.texts)
    return _joined(listed, found[int(rng.integers(len(found)))])


def orders(texts: list[str]) -> list[list[int]]:
    """The orders a list of items of these ``texts`` is most often asked for, as lists of their
    places: by the numbers each item holds (by the first, then the next: "3:42" before "3:50"),
    when every item holds one; by the text, alphabetically; by its last word, alphabetically
    (records by what is said of each key, "Eva, zone B", and names by surname); by length; each
    from either end; and the list reversed. Distinct orders only."""
    last_words = [(WORD.findall(text) or [""])[-1].lower() for text in texts]
    keys: list[list[Any]] = [[text.lower() for text in texts], [len(text) for text in texts]]
    if len(set(last_words)) > 1:  # "cm" after every height orders nothing
        keys.insert(1, last_words)
    values = [tuple(float(n) for n in NUMBER.findall(text)) for text in texts]
    if all(values):
        keys.insert(0, values)
    found = [list(range(len(texts)))[::-1]]
    for key in keys:
        ascending = sorted(range(len(texts)), key=key.__getitem__)
        found += [ascending, sorted(range(len(texts)), key=key.__getitem__, reverse=True)]
    return [order for k, order in enumerate(found) if order not in found[:k]]


def _joined(listed: PromptList, order: list[int]) -> list[int]:
    out: list[int] = []
    for k, index in enumerate(order):
        out += [*(listed.join if k else []), *listed.items[index]]
    return [*out, END]


def _fitting(candidates: list[list[int]], max_tokens: int, constraint: ChoiceConstraint | None) -> list[list[int]]:
    return [c for c in candidates if len(c) <= max_tokens and _fits(c, constraint)]


def _fits(candidate: list[int], constraint: ChoiceConstraint | None) -> bool:
    if constraint is None:
        return True
    for k, token in enumerate(candidate):
        mask = constraint.allowed(candidate[:k])
        if mask is None or not mask[token]:
            return False
    return True


def explore(
    model: PolicyModel,
    prompt: Sequence[int],
    samples: list[Generation],
    *,
    share: float,
    max_tokens: int,
    temperature: float,
    constraint: ChoiceConstraint | None,
    rng: np.random.Generator,
    record: ExploredTurns | None = None,
    rewarded: RewardedAnswers | None = None,
    rewarded_share: float = 0.0,
    frequencies: WordFrequencies | None = None,
    case_share: float = CASE_SHARE,
    rewrite_share: float = REWRITE_SHARE,
    fork_share: float = 0.0,
) -> list[Generation]:
    """``samples`` with each one replaced, with probability ``share``, by prompt words (a share
    ``case_share`` of them in another case, or a sum or difference of the prompt's numbers, or
    a list of the prompt's reordered, or, a share ``rewrite_share``, a run of its words
    rewritten), or else with
    probability ``rewarded_share`` by an answer from ``rewarded`` (each replacement noted in
    ``record``, which also weighs each kind by its record). ``frequencies``, when given,
    counts this prompt's words, and half the words and pairs of words are then drawn by their
    rarity. With probability ``fork_share``, one of those left is forked by a word
    (``_word_forked``) and, when every sample is the same reply, another by a character
    (``_forked``)."""
    if temperature <= 0 or not samples:
        return samples
    draws = rng.random(len(samples))
    chosen: list[int] = []
    picks: list[list[int]] = []
    kinds_of: list[str] = []
    if (draws < share).any():
        found = _words(model, prompt)  # read once for every kind of candidate
        words = _fitting(_singles(found), max_tokens, constraint)
        phrases = _fitting(_pairs(model, found), max_tokens, constraint)
        rare_words: Drawn = ([], None)
        rare_phrases: Drawn = ([], None)
        if frequencies is not None:
            frequencies.add(found)
            rarity = frequencies.rarity(found)
            if rarity is not None:
                rare_words, rare_phrases = _rare(model, found, rarity, max_tokens, constraint)
        sums = _fitting(_sums(model, found), max_tokens, constraint)
        lists = _lists(model, prompt)
        runs, texts, links = _runs(model, prompt)
        run_chances, span_chances = _run_chances(runs, frequencies)
        offers = {"list": bool(lists), "rewrite": bool(runs), "links": bool(links), "sum": bool(sums), "item": bool(lists), "span": bool(runs), "pair": bool(phrases)}
        kinds, kind_chances = _kind_chances(offers, rewrite_share, case_share, record.records() if record is not None else {})
        for index in np.flatnonzero(draws < share):
            kind = kinds[int(rng.choice(len(kinds), p=kind_chances))]
            if kind == "list":
                pick = _reordered(lists, rng)
            elif kind == "sorted":
                pick = _sorted(lists, rng)
            elif kind == "item":
                items = lists[int(rng.integers(len(lists)))].items
                pick = [*items[int(rng.integers(len(items)))], END]
            elif kind in REWRITES:
                pick = _rewritten(model, runs[_draw_run(len(runs), run_chances, rng)], kind, links, rng)
            elif kind == "span":
                pick = [*texts[_draw_run(len(runs), span_chances, rng)], END]
            else:
                pool, rare = {"sum": (sums, ([], None)), "pair": (phrases, rare_phrases), "word": (words, rare_words)}[kind.removesuffix("_cased")]
                chances = None
                if rare[0] and rng.random() < RARE_SHARE:
                    pool, chances = rare
                if not pool:
                    continue
                pick = pool[int(rng.integers(len(pool)) if chances is None else rng.choice(len(pool), p=chances))]
                if kind.endswith("_cased"):
                    variants = _fitting(_case_variants(model, pick), max_tokens, constraint)
                    pick = variants[int(rng.integers(len(variants)))] if variants else pick
            if not _fitting([pick], max_tokens, constraint):  # too long, or not allowed: a word instead
                if not words:
                    continue
                pick, kind = words[int(rng.integers(len(words)))], "word"
            chosen.append(int(index))
            picks.append(pick)
            kinds_of.append(kind)
    offered = np.flatnonzero((draws >= share) & (draws < share + rewarded_share))
    answers = rewarded.fitting(max_tokens, constraint) if rewarded is not None and offered.size else []
    for index in offered if answers else ():
        chosen.append(int(index))
        picks.append(answers[int(rng.integers(len(answers)))])
        kinds_of.append("rewarded")
    forks: list[tuple[int, Generation]] = []  # by a character: the policy wrote them on
    left = rng.permutation(sorted(set(range(len(samples))) - set(chosen)))  # samples no other kind replaced
    if fork_share > 0 and constraint is None and len(left) > 1 and rng.random() < fork_share:
        by_word = _word_forked(model, prompt, samples[int(left[0])], max_tokens, rng)
        if by_word is not None:  # scored with the replacements, in one pass
            chosen.append(int(left[0]))
            picks.append(by_word)
            kinds_of.append("fork")
        by_character = _forked(model, prompt, samples[0], max_tokens, temperature, rng) if _unanimous(samples) else None
        if by_character is not None:
            forks.append((int(left[1]), by_character))
    if not chosen and not forks:
        return samples
    out = list(samples)
    for index, word, kind, logprobs in zip(chosen, picks, kinds_of, _logprobs(model, prompt, picks, temperature, constraint)):
        out[index] = Generation(list(word), logprobs, "stop")
        if record is not None:
            record.add(prompt, word, kind)
    for index, fork in forks:
        out[index] = fork
        if record is not None:
            record.add(prompt, fork.token_ids, "fork")
    return out


def _unanimous(samples: list[Generation]) -> bool:
    first = samples[0].token_ids
    return all(sample.token_ids == first for sample in samples[1:])


def _forked(
    model: PolicyModel, prompt: Sequence[int], sample: Generation, max_tokens: int, temperature: float, rng: np.random.Generator
) -> Generation | None:
    """``sample`` changed at one position drawn evenly (its end token included) to another
    character of the prompt's last message or to the end token, drawn evenly, and written on
    from there by the policy (None when there is no other). Drawn as the policy ranks them
    instead, the other token was most often one it gives a sliver to everywhere (a bracket), not
    the character the reply lacked."""
    tokens = list(sample.token_ids)
    at = int(rng.integers(len(tokens)))
    start, stop = last_message_bounds(np.asarray(prompt))
    candidates = sorted({*prompt[start:stop], END} - {tokens[at]})
    if not candidates:
        return None
    other = candidates[int(rng.integers(len(candidates)))]
    job = SampleJob(prompt, 1, max_tokens, rng, prefix=[*tokens[:at], other])
    return generate_batch(model, [job], temperature=temperature)[0][0]


def _word_forked(model: PolicyModel, prompt: Sequence[int], sample: Generation, max_tokens: int, rng: np.random.Generator) -> list[int] | None:
    """``sample``'s tokens with one of its words (a run of letters and digits, drawn evenly)
    replaced by another word of the prompt (``_words``, drawn evenly), the rest kept as it was,
    and the end token (None when there is none, or the result is too long). A reply right but
    for one word (a file's new extension, a name in a sentence) is that near reply; a fork by
    one character finds it only when the word is one character long or the policy writes it
    on from its first."""
    tokens = list(sample.token_ids)
    body = tokens[:-1] if tokens and tokens[-1] == END else tokens
    spans = word_spans(body, model.is_word_char)
    if not spans:
        return None
    start, stop = spans[int(rng.integers(len(spans)))]
    candidates = [word for word in _words(model, prompt) if word != body[start:stop]]
    if not candidates:
        return None
    forked = [*body[:start], *candidates[int(rng.integers(len(candidates)))], *body[stop:], END]
    return forked if len(forked) <= max_tokens else None


def _run_chances(runs: list[list[list[int]]], frequencies: WordFrequencies | None) -> tuple[np.ndarray | None, np.ndarray | None]:
    """The chance of drawing each of ``runs`` in proportion to the product of its words'
    rarities (for a rewrite), and in proportion to their geometric mean (for a run as written);
    None and None until ``frequencies`` can tell."""
    rarity = frequencies.rarity([word for run in runs for word in run]) if frequencies is not None and runs else None
    if rarity is None:
        return None, None
    ends = np.cumsum([0, *(len(run) for run in runs)])
    products = np.asarray([np.prod(rarity[a:b]) for a, b in zip(ends, ends[1:])])
    means = products ** (1 / np.diff(ends))
    return products / products.sum(), means / means.sum()


def _draw_run(count: int, chances: np.ndarray | None, rng: np.random.Generator) -> int:
    """The index of a run: half the time (when ``chances`` are known) drawn by them, else evenly."""
    rare = chances is not None and rng.random() < RARE_SHARE
    return int(rng.choice(count, p=chances) if rare else rng.integers(count))


def _logprobs(
    model: PolicyModel, prompt: Sequence[int], words: list[list[int]], temperature: float, constraint: ChoiceConstraint | None
) -> list[list[float]]:
    """Each word's per-token logprobs under ``model``, masked as the sampler masks them."""
    prompts, generated, targets, masks = [], [], [], []
    for word in words:
        for k, token in enumerate(word):
            prompts.append(prompt)
            generated.append(word[:k])
            targets.append(token)
            if constraint is not None:
                masks.append(constraint.allowed(word[:k]))
    allowed = np.stack(masks) if constraint is not None else None
    logp, _ = model.token_logprobs(model.features(prompts, generated), np.asarray(targets, dtype=np.int64), temperature, allowed)
    out, at = [], 0
    for word in words:
        out.append([float(x) for x in logp[at : at + len(word)]])
        at += len(word)
    return out
