"""Replies that are numbers: a value computed from the prompt's numbers and its counts of characters and words, spelled out.

The output side of "numbers as values". The policy reads the first ``MAX_NUMBERS`` numbers of
the prompt's last message (maximal runs of digits), and in a conversation those of its opening
message, with the token before and after each and the word right after each ("4 cows"), and
computes one value, a signed sum of them whose weights depend on those neighbouring tokens, on
that word (a unit: legs per cow, minutes per hour) and on each number's place, plus the last
message's differences of neighbouring numbers weighted by place, plus its number where it is
the only one (that weight starts at 1: a reply to one number starts as that number), plus a
weight per character (digits aside: they count as values) and per hashed word (numbers aside)
times how often it occurs in the last message, less its mean count over the prompts trained on
(``v = bias + sum_k x_k (w_place[k] + w_before[token] + w_after[token] + w_word[word]) + sum_k
d_k w_diff[k] + w_lone x_lone + sum_c (n_c - mean_c) w_tally[c]``, ``c`` over characters and
words). So "the first number", "the second minus the first", "twice the number after 'of'",
"how many vowels" or "how many of these words are animals" is a few weights, and it holds for
inputs never seen in training: nothing is learned per value. The counts are centred because a
prompt's fixed wording holds the same characters every time: a count that never varies is 0
and its weight takes no step, where uncentred it would be a second bias that each of a dozen
characters moved. Adam's steps on these weights are scaled to their inputs' size and, once the
value is near an integer, to the spread (``step_scales``).

The value becomes a Gaussian over the integers ``-NUMBER_RANGE..NUMBER_RANGE`` (weight
``exp(-(n - v)^2 / (2 spread^2))``, the spread learned), read as text: given the reply so far,
the share of that distribution's mass each next token would continue (a digit, the minus sign,
or the end token once the reply spells a whole integer). Those shares, renormalised over the
tokens the request allows, are the path's own next-token distribution, and the model draws the
next token from it with a learned probability per step (``mix_in_numbers``), from the text
policy otherwise. The path starts wide, so it hardly prefers one number to its neighbours, and
narrows as the value is learned: a Gaussian policy over numbers, the usual one for continuous
actions. It applies to every prompt (a count is a number whether or not the prompt holds one),
and is silent for replies that have stopped being an integer and where the request allows none
of its tokens.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from hermes_rl_mcp.trainer.phrases import true_runs
from hermes_rl_mcp.trainer.tokenizer import END, PAD, CharTokenizer

NUMBER_RANGE = 999
MAX_NUMBERS = 4  # numbers read per message, the first ones
NUMBER_PAIRS = tuple((i, j) for i in range(MAX_NUMBERS) for j in range(i + 1, MAX_NUMBERS))  # (first, second), in reading order
_PAIR_FIRST, _PAIR_SECOND = (np.asarray(side) for side in zip(*NUMBER_PAIRS))
MAX_DIGITS = 6  # a longer run of digits is read as its first six
STEP_REFERENCE = 10.0  # the size of input for which a value weight takes Adam's whole step


@dataclass(frozen=True)
class Continuations:
    """The integers whose text starts with one prefix, sorted by the token each writes next:
    their values, the distinct next tokens, and where each token's run of integers starts."""

    values: np.ndarray
    tokens: np.ndarray
    starts: np.ndarray


class IntegerSpelling:
    """For every prefix of an integer's text (as tokens), the integers it can still become."""

    def __init__(self, tokenizer: CharTokenizer) -> None:
        grouped: dict[tuple[int, ...], list[tuple[int, int]]] = {}
        for n in range(-NUMBER_RANGE, NUMBER_RANGE + 1):
            spelled = [*tokenizer.encode(str(n)), END]
            for cut in range(len(spelled)):
                grouped.setdefault(tuple(spelled[:cut]), []).append((spelled[cut], n))
        self._table: dict[tuple[int, ...], Continuations] = {}
        for prefix, pairs in grouped.items():
            nexts, values = np.asarray(sorted(pairs), dtype=np.int64).T
            tokens, starts = np.unique(nexts, return_index=True)
            self._table[prefix] = Continuations(values.astype(np.float64), tokens, starts)

    def continuations(self, prefix: tuple[int, ...]) -> Continuations | None:
        """None when no integer's text starts with ``prefix``."""
        return self._table.get(prefix)


def read_numbers(
    tokens: np.ndarray, is_digit: np.ndarray, zero: int, minus: int, is_word: np.ndarray, point: int = -1
) -> tuple[np.ndarray, np.ndarray, int]:
    """The first MAX_NUMBERS numbers of ``tokens`` (one message's content; ``is_digit`` per
    token, ``zero`` the token of "0", the digits' tokens following it in order): their values
    (MAX_NUMBERS,), for each its place, the token before it and the token after it
    (MAX_NUMBERS, 3; PAD at the message's ends), and how many there are. Unused entries have
    value 0, so they add nothing. A number is negative where a minus sign (``minus``) stands
    right before it and is not itself joined to a word (``is_word`` per token): "(3, -5)" holds
    -5, while "7 - 5" and "1961-1994" hold 5 and 1994. A number may have a fraction after a
    decimal point (``point``, as ``number_runs`` reads it): "12.4" is 12.4."""
    values = np.zeros(MAX_NUMBERS)
    context = np.zeros((MAX_NUMBERS, 3), dtype=np.int64)
    context[:, 0] = np.arange(MAX_NUMBERS)
    runs = number_runs(tokens, is_digit, is_word, point)[:MAX_NUMBERS]
    for k, (begin, end) in enumerate(runs):
        whole, _, fraction = "".join("." if t == point else str(int(t) - zero) for t in tokens[begin:end]).partition(".")
        values[k] = float(f"{whole[:MAX_DIGITS]}.{fraction[:MAX_DIGITS] or 0}")
        if begin > 0 and tokens[begin - 1] == minus and (begin == 1 or not is_word[tokens[begin - 2]]):
            values[k] = -values[k]
        context[k, 1] = tokens[begin - 1] if begin > 0 else PAD
        context[k, 2] = tokens[end] if end < len(tokens) else PAD
    return values, context, len(runs)


def number_runs(tokens: np.ndarray, is_digit: np.ndarray, is_word: np.ndarray, point: int = -1) -> list[tuple[int, int]]:
    """The (begin, end) spans of ``tokens`` that are numbers: runs of digits, but for those
    inside a code. A run that a letter comes right before ("k4", "B12"), or that letters and
    then another digit follow ("5pw88"), is one of a code's characters, not a value: read as
    values, a code's digits made the number path's value swing by thousands from one code to
    the next. A run that only letters follow is a number with its unit ("10am", "3rd"). A
    decimal point (``point``) between two runs of digits, and the second run, belong to the
    number: "12.4" is one number, not 12 and 4 (a second point, as in "1.2.3", ends it)."""
    digit = is_digit[tokens]
    if not digit.any():
        return []
    word = is_word[tokens]
    runs = []
    spans = true_runs(digit)
    merged: list[tuple[int, int]] = []
    for begin, end in spans:  # a run right after "digits and a point" is that number's fraction
        if merged and begin == merged[-1][1] + 1 and tokens[begin - 1] == point and merged[-1] in spans:
            merged[-1] = (merged[-1][0], end)
        else:
            merged.append((begin, end))
    for begin, end in merged:
        if begin > 0 and word[begin - 1]:
            continue
        after = end
        while after < len(tokens) and word[after] and not digit[after]:
            after += 1
        if after < len(tokens) and digit[after]:
            continue
        runs.append((begin, end))
    return runs


def neighbour_differences(values: np.ndarray, count: int) -> np.ndarray:
    """(MAX_NUMBERS - 1,): each of a message's first ``count`` numbers (``values``, as
    ``read_numbers`` gives them) minus the one before it, 0 beyond. "From 1961 to 1994" is then
    33 on an input of its own, on the scale of the answer rather than of the years."""
    out = np.zeros(MAX_NUMBERS - 1)
    present = min(count, MAX_NUMBERS)
    if present > 1:
        out[: present - 1] = np.diff(values[:present])
    return out


def pair_comparisons(values: np.ndarray, count: int) -> np.ndarray:
    """(len(NUMBER_PAIRS),): for every pair of a message's first ``count`` numbers (``values``,
    as ``read_numbers`` gives them), +1 where the second is above the first, -1 where below, 0
    where they are equal or a number is missing."""
    first, second = _PAIR_FIRST, _PAIR_SECOND
    return np.where(second < count, np.sign(values[second] - values[first]), 0.0)


def step_scales(inputs: np.ndarray, weight_of: np.ndarray, size: int, spread: float) -> np.ndarray:
    """(size,): how much of Adam's step each of ``size`` value weights takes, given the inputs it
    multiplied in this batch (``inputs[i]`` for weight ``weight_of[i]``) and the path's spread.

    Adam moves a weight by about its learning rate whatever its gradient's size, so a weight
    multiplying 1961 moves a value 200 times as far per step as one multiplying 9 does: the value
    could never settle on an integer. A weight whose inputs are larger than ``STEP_REFERENCE``
    takes that much less of the step, so a step moves a value about equally for every scale of
    number. Once the spread is under 1 (the value is near an integer) the steps shrink with its
    square, as a natural-gradient step on a Gaussian's mean does (the inverse of its Fisher
    information): otherwise the value would keep moving by as much as it did far from the answer,
    and a greedy reply that rounds it would flip between neighbours. A weight no input reached in
    this batch has no gradient and does not move (Adam's momentum alone would move it a full step)."""
    used = inputs != 0
    square = np.bincount(weight_of[used], weights=inputs[used] ** 2, minlength=size)
    count = np.bincount(weight_of[used], minlength=size)
    rms = np.sqrt(square / np.maximum(count, 1))
    return np.where(count > 0, np.minimum(1.0, STEP_REFERENCE * min(1.0, spread) ** 2 / np.maximum(rms, 1e-12)), 0.0)


@dataclass(frozen=True)
class NumberGroup:
    """The rows that share one reply so far, and the integers that reply can still become."""

    rows: np.ndarray
    spelling: Continuations


@dataclass(frozen=True)
class LogShares:
    """One group's (rows, next tokens) log-shares and their derivatives in the value and in the
    log of the spread."""

    log_share: np.ndarray
    dvalue: np.ndarray
    dlog_spread: np.ndarray


def number_log_shares(groups: list[NumberGroup], value: np.ndarray, log_spread: float) -> list[LogShares]:
    """Per group, the log-share of the integers' mass around ``value`` (one per row) that each
    next token continues. Computed in log space: a token whose integers all lie far from the
    value keeps a finite log-share and a gradient that pulls the value towards them."""
    sharpness = 0.5 * np.exp(-2.0 * log_spread)
    out = []
    for group in groups:
        spelling = group.spelling
        distance = spelling.values[None, :] - value[group.rows, None]  # (R, m)
        logw = -sharpness * distance**2
        top = np.maximum.reduceat(logw, spelling.starts, axis=1)  # (R, U): per next token
        weight = np.exp(logw - np.repeat(top, np.diff(np.r_[spelling.starts, logw.shape[1]]), axis=1))
        mass = np.add.reduceat(weight, spelling.starts, axis=1)  # each token's, scaled by exp(-top)
        log_mass = top + np.log(mass)
        peak = log_mass.max(axis=1, keepdims=True)
        log_total = peak + np.log(np.exp(log_mass - peak).sum(axis=1, keepdims=True))
        # d log(share)/dv = 2 sharpness (E[n - v | next token] - E[n - v]), and likewise
        # d log(share)/d log(spread) = 2 sharpness (E[(n - v)^2 | next token] - E[(n - v)^2])
        share = np.exp(log_mass - log_total)
        moments = []
        for power in (distance, distance**2):
            given = np.add.reduceat(weight * power, spelling.starts, axis=1) / mass
            moments.append(2.0 * sharpness * (given - (share * given).sum(axis=1, keepdims=True)))
        out.append(LogShares(log_mass - log_total, *moments))
    return out


@dataclass(frozen=True)
class RewardedIntegers:
    """Replies that were whole integers and scored above their group, which the path's value is
    regressed on (``PolicyModel.backward``): the prompt each answered (an index into the batch's
    ``Features``), the integer, and its weight in the loss (negative: the loss falls as the value
    nears the integer)."""

    prompt: np.ndarray
    value: np.ndarray
    weight: np.ndarray


@lru_cache(maxsize=4)
def integer_spelling(tokenizer: CharTokenizer) -> IntegerSpelling:
    """One table per tokenizer, shared by a model and its copies."""
    return IntegerSpelling(tokenizer)


@dataclass(frozen=True)
class Mixture:
    """The next-token distributions after mixing in the number path: their log-probabilities,
    each row's share of the number path (0 where it does not apply), and per group the number
    path's own next-token probabilities (rows, next tokens)."""

    log_probs: np.ndarray
    share: np.ndarray
    number_probs: list[np.ndarray]


def mix_in_numbers(
    log_probs: np.ndarray, groups: list[NumberGroup], shares: list[LogShares], mix_logit: np.ndarray, temperature: float
) -> Mixture:
    """Each row of a group draws its next token from the text policy (``log_probs``, already
    masked) with probability ``1 - mix`` and from the number path with ``mix = sigmoid(mix_logit[row])``:
    the log-shares at ``temperature``, renormalised over the tokens the mask allows. The logs of
    ``mix`` and ``1 - mix`` are taken from the logit: once the path is all but certain, ``mix``
    rounds to 1, and ``log(1 - mix)`` would make every other token's logprob -inf (an explored
    word's among them, which a JSON response cannot carry)."""
    log_mix, log_rest = -np.logaddexp(0.0, -mix_logit), -np.logaddexp(0.0, mix_logit)  # log-sigmoids
    share = np.zeros(len(log_probs))
    number_probs: list[np.ndarray] = []
    if not groups:  # no reply can still become an integer: nothing to mix
        return Mixture(log_probs, share, number_probs)
    out = log_probs.copy()
    for group, shares_of in zip(groups, shares):
        rows, tokens = group.rows, group.spelling.tokens
        masked = ~np.isfinite(log_probs[rows[:, None], tokens[None, :]])
        logits = np.where(masked, -np.inf, shares_of.log_share / temperature)
        applies = ~masked.all(axis=1)
        top = np.where(applies, logits.max(axis=1), 0.0)[:, None]
        probs = np.exp(logits - top)
        probs /= np.maximum(probs.sum(axis=1, keepdims=True), 1e-300)
        number_probs.append(probs)
        share[rows] = np.where(applies, np.exp(log_mix[rows]), 0.0)
        with np.errstate(divide="ignore"):  # where the path is not mixed in, the text policy keeps every token
            out[rows] += np.where(applies, log_rest[rows], 0.0)[:, None]
            mixed_in = np.where(applies, log_mix[rows], -np.inf)[:, None] + np.log(probs)
            out[rows[:, None], tokens[None, :]] = np.logaddexp(out[rows[:, None], tokens[None, :]], mixed_in)
    return Mixture(out, share, number_probs)
