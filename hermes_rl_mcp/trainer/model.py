"""The local policy: a small character-level model trained from scratch, in NumPy.

It knows nothing of any task. The next token of an assistant turn is predicted from general
views of its context, each a bias that helps short text tasks in general:

* **positions from both ends**: the last ``window`` tokens of the prompt, counted back from its
  end (slot d holds the token d places before it), and the first ``message_slots`` characters of
  the prompt's last message, counted from its start. Fixed phrasing around a variable part lines
  up in one view or the other. In a conversation, the first ``message_slots`` characters of its
  first message too (what it was opened with, often the task), however far back it lies, and
  of the user's message before the last (what was said just before: a second fact, a second
  item), so the three messages a short conversation turns on are each read from their start;
* **numbers as values**: every digit in those slots also enters as its value along a direction
  learned per slot, so comparing or combining digits is linear; and for every pair of numbers
  of the last message and of a conversation's opening, whether the second is above or below the
  first, so which of two numbers is larger is one input whatever their length or place; and
  each of those numbers' sign (a minus sign right before a number, not joined to a word, makes
  it negative), so which side of zero a number lies on is one input too;
* **words said before**: for each of the last message's first words, whether the
  conversation's opening message holds it, and whether the user's message before the last
  does, so "is the thing asked about the one just mentioned" is one input;
* **repeats**: for every pair of window slots, whether they hold the same character, so "is
  this letter in that word" or "the same word again" is a sum of inputs, not a search;
* **rises**: for every two neighbouring characters of each view, whether the second comes
  later or earlier in code order (letters alphabetically, digits by value), so whether a run
  of characters is in order is a sum of inputs;
* **characters and words as a bag**: for each distinct character of the last message, a row for
  (character, how often it occurs), and for each word a hashed row, wherever they are;
* **the turn so far**: the tokens generated so far by position, the previous token, the step,
  and the last message's length minus the step (answers whose length follows the input's);
* **a pointer over the prompt**: attention over the character slots of those views (and an
  end slot) by position (per step), by content (a learned key per token), by what the hidden
  layer asks for (a query over positions and over tokens, so which word to copy can depend on
  the whole prompt), by word (a key per hashed word, fixed and as the hidden layer asks: which
  of the prompt's words to copy can depend on what the word is, not only on its letters or
  place), by a word's place in its message (a key per view and place, fixed and as the hidden
  layer asks: "the second item" is one place whatever the items' lengths); both keys score the
  character the turn has reached in the word (its first, or, where the turn's last word is the
  word's first characters, the one after them), so a word begun goes on being chosen where
  "Ben" and "Bob" share the "B"; by marks (``MARKS``: the place a number of the
  prompt names, an item or word said twice, a word that ends or begins like another), by
  coverage (whether the slot's token was already emitted this turn, and whether the word it
  starts was written whole) and by neighbourhood
  (whether the slot follows, or precedes, a prompt occurrence of the token just emitted, or of
  the last two, letters matched whatever their case, so copying a span forwards or backwards
  is one weight and a letter shared by two words does not switch words mid-copy; the end slot
  follows the last message's last characters and, read backwards, precedes its first, so "stop
  where the message stops" is a weight too, for a copy forwards or backwards), and by walks
  along a phrase (``LINK_FEATURES``: the word after, or before, the one whose initial was just
  written, or the one just written and linked: initials, or words rejoined, are one weight
  each). The attended mass goes through a learned copy map (the identity at first; ``M`` per
  token pair and ``R`` per code distance, shared by every character), then a case switch (a
  share of each letter's mass sent to its other case, learned per step and as the hidden layer
  asks), and each token's probability is multiplied by a power of the mass it receives (plus a
  floor). So
  "emit the k-th character", "emit the largest digit", "emit the next unused letter",
  "continue the word", "emit each letter transformed" or "a capital first" is a few weights to
  learn.
* **counts through the pointer**: each slot also carries how often its character occurs in
  its word, and the attention summed per count adds a learned row of ``C`` to the logits, so
  "how many of this letter" is the pointer finding the letter plus a map from counts to tokens;
  likewise the slot starting a word carries how often its message holds the word (``C_word``),
  so "how many red things" is the pointer finding "red";
* **order within a word**: a slot whose character comes first (or last) in code order among
  the characters of its word not yet written this turn gets a score of its own, so writing a
  word's letters sorted, or picking its largest digit, is one weight and not a key per letter;
* **order within a list**: in a list the prompt gives (``lists.py``: three or more words joined
  by the same separator with a comma), the item that comes next in order (numbers by value,
  words alphabetically), from the first or from the last, gets a score of its own at the
  character the turn has reached in it (as the word keys do), where "next" counts the commas
  the turn has written; so writing a list sorted, either way, is one weight and not a key per
  item, and "61" after "20, 6" is not mistaken for "64"; after the last item in order the end
  slot takes the mark, so the same weight ends the list there;
* **words said with numbers**: likewise, a word a few words before a number of its message
  ("Ann is 34", "Greta 165 cm") or just after one ("3 apples") is ranked by that number, for
  each of those offsets, so "the youngest" or "the names from shortest to tallest" is one
  weight too;
* **places the prompt names**: a slot whose character stands at place k of its word (counted
  from 1), or whose word is the k-th of its message, gets a score of its own when k is one of
  the last message's numbers, so "the third letter" or "word 2" is one weight and not a
  position learned per number;
* **things said twice**: the first character of a list item that another item of its list
  repeats, and of a word its message holds more than once, gets a score of its own, so "the
  name listed twice" is one weight and not a comparison of every pair of words; so does the
  first character of a word another user message of the conversation holds ("the item not
  mentioned yet", "the one I told you about");
* **a number path** (``numbers.py``): a value computed from the last message's numbers and a
  conversation's opening message's (a signed sum, each number's weight set by its place and the
  tokens around it, plus the differences of neighbouring numbers, and starting at the number
  itself where the message holds one) and from a tally of the last message's characters and
  words (each one's count, less its mean over the prompts trained on, times a weight), and a
  Gaussian over the integers around that value, spelled out token by token, mixed into the next
  token with a learned share per step. So "the sum", "the difference" or "the first number plus
  the second" is a few weights that hold for numbers never seen in training, and so is "how many
  of these characters" (vowels, spaces between words, commas between items) or "how many of
  these words" (the animals of a list, the replies that say yes). Besides its tokens'
  gradients, the value is regressed on the integer replies that scored above their group
  (``backward``'s ``rewarded``).

The sparse views are summed into one hidden layer (an embedding bag: a linear layer on
one-hot inputs; each position's sums normalised over the units, then a ReLU) that produces
generation logits; a per-step output bias learns answer lengths.
The number path is mixed in after the softmax, not added to the logits: added, it was a product
with the text policy, which samples the prompt's own digits most; those mostly scored below
their group, and pushed away from them the value fled the prompt's numbers.

Gradients are written out by hand (``backward``) and checked against finite differences in the
tests. Parameters are a plain dict of arrays so the optimiser and checkpoints treat them alike.
"""

from __future__ import annotations

import threading
from bisect import bisect_left
from collections import Counter, OrderedDict
from dataclasses import dataclass
from typing import Sequence

import numpy as np

from hermes_rl_mcp.trainer.lists import LAST_ITEM_WORDS, TokenList, find_lists
from hermes_rl_mcp.trainer.numbers import (
    MAX_NUMBERS, NUMBER_PAIRS, STEP_REFERENCE, LogShares, NumberGroup, RewardedIntegers, integer_spelling,
    mix_in_numbers, neighbour_differences, number_log_shares, number_runs, pair_comparisons, read_numbers, step_scales,
)
from hermes_rl_mcp.trainer.phrases import LINK_CHARACTERS, TIGHT_LINKS, find_phrases, linked_gaps, word_spans
from hermes_rl_mcp.trainer.tokenizer import END, PAD, ROLE_TOKENS, CharTokenizer

Params = dict[str, np.ndarray]

# Output-side parameters enter the logits multiplied by a fixed gain. Adam moves every raw
# parameter by about the learning rate per step whatever its gradient's scale, so without the
# gain an output bias or a pointer weight would need thousands of steps to move a logit by a few
# nats; with it, a few hundred steps at the default learning rate suffice.
# The pointer multiplies each token's probability by (COPY_FLOOR + the attention mass the copy
# map carries to it) ** gain:
# bounded whatever the gain learns (a token with all the attention gains log(1 / COPY_FLOOR) nats
# over one the prompt lacks), and from the start a prompt's characters are an order of magnitude
# likelier than others, whatever the number of slots the attention spreads over.
COPY_FLOOR = 0.003
GAINS = {
    "b2": 10.0, "B_step": 10.0, "P_pos": 10.0, "P_key": 10.0, "P_used": 10.0, "P_word_used": 10.0, "P_rel": 10.0, "P_end": 10.0, "P_gain": 10.0,
    "P_order": 10.0, "P_mark": 10.0,
    "L_span": 10.0, "M": 10.0, "R": 60.0, "C": 10.0, "C_word": 10.0, "P_case": 10.0,
    # The hidden layer's query is a sum over its units, each moving at the learning rate: no gain.
    "Q_pos": 1.0, "Q_key": 1.0, "Q_case": 1.0, "Q_word": 1.0, "P_word": 10.0, "Q_place": 1.0, "P_place": 10.0, "P_near": 10.0,
    # The number path's value weights, the log of its spread and its share (a logit) per step.
    "N_place": 10.0, "N_before": 10.0, "N_after": 10.0, "N_word": 10.0, "N_bias": 10.0, "N_diff": 10.0, "N_lone": 10.0, "N_tally": 10.0, "N_spread": 15.0, "N_mix": 10.0,
}
# The repeats' weights start at zero beside hidden units that already differ by about 1 from
# prompt to prompt (the embeddings' sum): a relation between two slots is heard once its weights
# outgrow that, which at the learning rate took most of a run. Pairs that tell the batch's
# prompts apart take this many times Adam's step. Pairs that hold on every prompt (a fixed
# phrasing repeats its letters) say nothing a bias does not, and there are dozens of them: at a
# larger step together they moved the hidden layer's biases fast enough to unsettle a policy.
REPEAT_STEP = 2.0
# Rows of the input table that every prompt of a batch holds (its fixed phrasing: the same
# characters at the same slots, the same words in the bags) tell none of its prompts apart, so
# together they are one more bias of the hidden layer, made of a hundred or more weights. Adam
# moves each by about the learning rate, so they moved the units' pre-activations a hundred times
# faster than the bias does: within ten steps of one multi-turn run, all but one or two of the 64
# units were below zero for every prompt, and a ReLU below zero gets no gradient back. Such rows
# share this many rows' worth of step among them (each takes COMMON_ROWS_STEP / their count).
COMMON_ROWS_STEP = 8.0
# The hidden layer normalises each position's summed inputs over its units (mean 0, spread 1)
# before the bias and the ReLU, as layer normalisation does (without a gain: the output weights
# set the scale). Without it, what a batch's prompts have in common pushed nearly every unit
# below zero for every prompt as a run went on (3 of 64 units active per position at the end of
# a counting run), and a ReLU below zero gets no gradient back. Normalised, a push every unit
# shares is taken out, and about half the units stayed active through the same run (29 of 64).
# HIDDEN_NORM_FLOOR keeps the spread away from zero.
HIDDEN_NORM_FLOOR = 1e-4
# Raised when a change alters what the parameters mean or which parameters there are, so a
# checkpoint saved before it is refused with that reason rather than misread.
MODEL_REVISION = 17
# The number path's spread at first: wide, since its value means nothing until it is learned
# (at 8 an integer twelve units from the value loses 1.1 nats to the value itself).
NUMBER_SPREAD_PRIOR = 8.0
NUMBER_MIX_PRIOR = 0.25  # the number path's share of the next token where it applies, at first
# Messages read from their start: the last, the conversation's opening, and the user's message
# before the last.
HEADS = 3
# A word's place in its message (counted from 1) has a pointer key of its own in each view up to
# this place; words further on share none.
WORD_PLACES = 16
PLACE_KEYS = (HEADS + 1) * WORD_PLACES
# The pointer's marks: fixed scores a slot gets for what it is, one weight each (``P_mark``). A
# character at a place in its word that one of the last message's numbers names ("letter 3");
# the first character of a word at a place in its message that one names ("word 2"); the first
# character of a list item that another item of its list repeats; of a word that its message
# holds more than once; and of a word that shares its last (then first) AFFIX_SHORT or
# AFFIX_LONG characters with another, different word of its message; and of a word another
# user (or system) message of the conversation holds. So "the third letter", "the name given
# twice", "the word that ends like this one" or "the item not mentioned before" is one weight.
AFFIX_SHORT, AFFIX_LONG = 2, 3
# A word's neighbours in its message, this many words away (-1: the word before). At a word's
# first character the pointer reads each neighbour's hashed row, with a weight per neighbour and
# row (``P_near``): "the time marked free", "the name before 'speaks first'" is one weight. And a
# mark per offset: the neighbour is a word the last message holds (elsewhere than itself), so
# the value told beside the key a question names ("which day am I seeing Ana", told "seeing
# Ana on Tuesday" two turns before; "Omar ordered the salad ... who ordered the salad") is one
# weight, whichever key is asked about. The mark is 1 over how often the last message holds
# the neighbour elsewhere: the key the question names is there once, where the words every
# record repeats ("ordered", "the") are there as often as there are records.
NEAR_OFFSETS = (-3, -2, -1, 1, 2, 3)
# The pointer's coverage is per character (the slot's character was written this turn), so a
# list item that shares a letter with one written already looked written too. A slot that starts
# a word the turn has written whole (one of its first WRITTEN_WORDS words) also has a weight
# (``P_word_used``): "each item once", in a list written in any order, is one weight.
WRITTEN_WORDS = 8
# A word's key: its tokens read as digits in base WORD_HASH_BASE, modulo 2**61.
WORD_HASH_BASE, WORD_HASH_MASK = 131, (1 << 61) - 1
MARKS = 9 + len(NEAR_OFFSETS)
# A word said with a number ("Ann is 34", "Greta 165 cm", "pears cost $5", "3 apples") stands a
# few words before it or just after it. For each of these offsets (in words: -2 is two words
# before the number), a word that is not itself a number is ranked by the number of its message
# at that offset, as list items are ranked by their own text, so "the name with the smallest
# age", or names written in order of their heights, is one weight and not a key per name.
BOUND_OFFSETS = (-3, -2, -1, 1)
RANKS = 4 + 2 * len(BOUND_OFFSETS)  # a list item's place in order and by length, then a word's by its number's, each from both ends
# Every character of a ranked word carries its word's place in order and its own place in the
# word, as place * MAX_ITEM_CHARS + offset, so the item next in order is marked where the turn
# has reached in it: at its first character before the turn writes it, at its second once the
# turn has written one character of it. Marked only at the first, "61" and "64" both start with
# the "6" a sorted list writes after "20, ", and nothing then said which "6" was meant.
MAX_ITEM_CHARS = 64
# Both, and the word keys, score a word's character only where the turn's last word is the
# word's first characters (whatever their case): "Bob" begun as "B" goes on as "Bob" and not as
# "Ben", while a reply that writes a word backwards ("plane" -> "enalp") is not pulled forwards
# along it. The two are compared by a hash: each character's code (case folded, plus 1) times a
# fixed random weight for its place in the word, summed (a sum, so a whole prompt's prefixes
# are one cumulative sum; under 2**47 for any prompt, so int64 holds it exactly).
PREFIX_WEIGHTS = np.random.default_rng(20261207).integers(1, 1 << 30, MAX_ITEM_CHARS)
# The pointer's keys per word, each scored at the slot the turn has reached in the word (its
# first character, or the one after the word's first characters the turn's last word holds),
# fixed and as the hidden layer asks: (the Features field holding each slot's key, fixed weights, query weights).
WORD_KEYS = (("word_keys", "P_word", "Q_word"), ("place_keys", "P_place", "Q_place"))
NUMBER_SLOTS = 2 * MAX_NUMBERS  # the last message's numbers, then the opening message's
# The number path's bias is a weight on this constant input, not on 1: a step then moves the
# value as far as a step of a weight on a number of ``STEP_REFERENCE`` or more does. On 1, the
# bias moved the value 0.09 per batch at most, and an answer that is a constant less a number
# (60 less the minutes) needed about 700 batches to reach its constant.
BIAS_INPUT = STEP_REFERENCE
# The hidden layer reads, for every pair of the last message's numbers and of a conversation's
# opening message's, whether the second is above (+1) or below (-1) the first: which of two
# numbers is larger is then one input, for numbers of any length wherever they stand, not a
# relation learned between digit slots (a value never seen in training at a slot has one-hot
# rows that hold nothing but their random start, fading: ``learner.INPUT_DECAY``). Every pair,
# not only neighbours: the largest of three is not known from two neighbouring comparisons
# when the middle one is the smallest.
COMPARISONS = 2 * len(NUMBER_PAIRS)
# The hidden layer reads the sign of each number of the last message and of the opening (+1,
# -1, 0 where none): which side of zero a number lies on is one input, whatever its digits.
SIGNS = NUMBER_SLOTS
# Each number's size as a thermometer (``U_level``): for every level, whether the magnitude of
# the number at each of the NUMBER_SLOTS reaches it, each level a row of weights added to the
# hidden layer's inputs. A unit then reads a learned step function of the value wherever the
# number stands, so "18 or more" is a weight at one level; the digits' rows are per character
# slot, and a longer name before the number moves its digits to other slots. Every integer to
# 128, then levels 1/32 apart in ratio up to about a million.
NUMBER_LEVELS = np.concatenate([np.arange(1.0, 129.0), 128.0 * (1.0 + 1.0 / 32.0) ** np.arange(1, 292)])
# A number adds the weights of every level below it, and Adam moves each by about the learning
# rate: at a full step each, a number of 100 would move its units a hundred times as fast as an
# input row does (as the rows every prompt holds did: COMMON_ROWS_STEP). Per slot, the levels
# share this many levels' worth of step among as many as the batch's largest number reaches.
# Large enough that a threshold on a number near 100 is learned within a run: at 8, each of
# such a slot's rows moved at under a tenth of a step (docs/design-notes.md).
LEVELS_STEP = 32.0
# Each number's size also reaches the next token directly (``L_span``), past the hidden layer:
# a row of logits for the span of levels the magnitude lies in, spans of each of SPAN_WIDTHS
# levels. Through the hidden layer a label decided by a number's value was learned too slowly
# to beat the pointer's copy of its digits (a weight of 61.1 g named by its tens digit 6, so
# every boundary fell on a ten); a span's row moves only with the numbers in it, at a bias's
# step, so the label of the values near 61 is learned from them alone, and the wider spans
# carry it to a value never trained on.
SPAN_WIDTHS = (1, 4, 16)
SPAN_LEVELS = len(NUMBER_LEVELS) + 1  # levels reached: 0 (under 1, or no number) to all of them
SPAN_OFFSETS = np.cumsum([0] + [-(-SPAN_LEVELS // width) for width in SPAN_WIDTHS])  # each width's first row
# Arrays kept with the parameters (checkpointed and copied with them) that no gradient moves:
# the mean tally of the prompts trained on, and how many prompts that mean is over (``observe``).
STATISTICS = ("N_tally_mean", "N_tally_seen")
# The tally's counts per class of character, after those per character and per word: letters,
# uppercase letters, the digits of codes, then numbers (``numbers.number_runs``). Their weights,
# in that order:
TALLY_CLASSES = 4
TALLY_PARTS = ("N_tally", "N_words", "N_classes")
# Reading-order offsets the pointer scores a slot by: the slot's token is ``k`` places after a
# prompt occurrence of the previously emitted token (1: its successor, -1: its predecessor, 0: the
# same token again). Copying a span forwards or backwards is then one weight, not one per step.
NEIGHBOUR_OFFSETS = (-3, -2, -1, 0, 1, 2, 3)
# Four more scores match the last two emitted tokens, then the last three, not just the last:
# the slot continues, in reading order (forwards, then backwards), a prompt occurrence of that
# pair (then triple). When a letter occurs in several of the prompt's words, the pair tells the
# word being copied from the others, and where a pair recurs too ("on" in "balloon" and in
# "longest"), the triple does.
PAIR_FEATURES = 4
# Four more walk a phrase word by word (``phrases.py``): the slot starts the word after (then
# before) a word whose first character is the one just written, so a phrase's initials are one
# weight ("Laura Jean Patel" -> "LJP"); and, once a link (a space, an underscore...) follows a
# word of the reply, the slot starts the word after (then before) a word with that word's first
# and last characters, so a phrase's words joined another way ("big_red_dog") or in reverse
# order are one weight. At the end slot the same four score ending the turn there: the
# character just written is the first of a phrase's last (then first) word, or the reply's
# last word, with no link after it, matches a phrase's last (then first) word.
LINK_FEATURES = 4
LINKS = 4  # per word start: the word before's first and last characters, the word after's
MAX_PHRASES = 16  # the phrases whose edges the end slot reads
PREVIOUS_TOKENS = 3  # the reply's last tokens the scores match
# The end slot follows the last message's last this many characters, as a slot follows the
# characters before it (offsets 1 to 3), and precedes its first this many (offsets -1 to -3):
# a copy forwards to the message's end, or backwards to its start, reaches the end slot next.
END_SLOT_TAIL = 3
# The copy map starts as the identity: a token's own entry leads the others by this many nats
# (at 8, about 3% of a copy leaks over the other tokens). R's larger gain lets one shared code
# distance overtake that lead in about a hundred steps.
IDENTITY_LOGIT = 8.0
# The case switch: after the copy map, each position sends this share of every letter's copied
# mass to the same letter in the other case (a sigmoid of a bias per step and of a query from
# the hidden layer), so "a capital at the start", "lowercase after a space" or "every letter's
# case swapped" is a few weights, where the copy map's case entries hold for every position
# alike. At this share at first, a copied letter comes out in the other case about once in
# a thousand: at one in forty, the copies sampled in the wrong case, pushed down, pushed the
# pointer off the right letters (drop_vowels stayed at 0.00 on three seeds, against 0.085 to
# 0.575 without the switch). A capitalised word is first sampled through exploration
# (``exploration.CASE_SHARE``), and the switch learns from it. It learns only from the tokens a
# batch pushes up (``backward``): switching a copied letter's case makes it less likely, so the
# tokens pushed down, most of them while most samples miss, turned the switch on through its
# query, and drop_vowels wrote capitals and stayed at 0.00 (seeds 1 and 2; 0.525 and 0.085
# without the switch, 0.70 with it learning so).
CASE_SWITCH_PRIOR = 0.001
_ROLE_IDS = np.asarray(sorted(ROLE_TOKENS.values()), dtype=np.int64)
_ROLE_TABLE = np.isin(np.arange(_ROLE_IDS.max() + 2), _ROLE_IDS)  # by token id, the last entry (False) for every id above


def _is_role(tokens: np.ndarray) -> np.ndarray:
    """Which of ``tokens`` are role tokens (a table lookup: ``np.isin`` costs more, per prompt)."""
    return _ROLE_TABLE[np.minimum(tokens, len(_ROLE_TABLE) - 1)]


@dataclass(frozen=True)
class ModelShape:
    vocab_size: int
    hidden_size: int = 64
    window: int = 32  # prompt tokens seen, counted back from the end of the prompt
    message_slots: int = 64  # characters of each of the HEADS messages seen, counted from its start
    gen_slots: int = 8  # generated tokens seen by position
    max_steps: int = 16  # steps with their own embedding, output bias and pointer positions
    max_count: int = 12  # occurrence counts with their own row (more share the last)
    bag_chars: int = 32  # distinct characters of the last message in the bag (the first ones)
    bag_words: int = 16  # words of the last message in the bag (the first ones)
    word_rows: int = 1024  # hashed word rows
    length_range: int = 64  # values of (message length - step) with their own row

    @property
    def pointer_slots(self) -> int:
        """The prompt views' slots (the window, then the HEADS messages') plus the end slot (the last)."""
        return self.window + HEADS * self.message_slots + 1

    @property
    def window_pairs(self) -> int:
        """Pairs of window slots compared for equal characters."""
        return self.window * (self.window - 1) // 2

    @property
    def neighbour_pairs(self) -> int:
        """Pairs of neighbouring characters, in reading order, compared by code (each view's)."""
        return self.window - 1 + HEADS * (self.message_slots - 1)

    @property
    def num_dense(self) -> int:
        """Dense inputs weighted by ``U``: the digit values of the prompt's views, the rises,
        the comparisons of the numbers, their signs, the words shared with earlier messages and
        the digit values of the reply so far (the repeats have weights of their own,
        ``U_same``)."""
        return self.window + HEADS * self.message_slots + self.neighbour_pairs + COMPARISONS + SIGNS + self.shared_words + self.gen_slots

    @property
    def tally_width(self) -> int:
        """Counts the number path reads of the last message: per character, per hashed word,
        then per class (``TALLY_CLASSES``)."""
        return self.vocab_size + self.word_rows + TALLY_CLASSES

    @property
    def shared_words(self) -> int:
        """Dense inputs saying which of the last message's first ``bag_words`` words occur in the
        conversation's opening message, then in the user's message before the last."""
        return 2 * self.bag_words

    @property
    def offsets(self) -> dict[str, int]:
        """First row of each sparse view in the input table, in order; "absent" is the one
        always-zero row that pads the bags."""
        v = self.vocab_size
        sizes = {
            "window": self.window * v,
            "message": self.message_slots * v,
            "opening": self.message_slots * v,
            "earlier": self.message_slots * v,
            "generated": self.gen_slots * v,
            "step": self.max_steps,
            "previous": v,
            "length": self.length_range,
            "chars": v * self.max_count,
            "words": self.word_rows,
            "absent": 1,
        }
        out, at = {}, 0
        for name, size in sizes.items():
            out[name] = at
            at += size
        out["total"] = at
        return out

    def to_dict(self) -> dict[str, int]:
        return {name: getattr(self, name) for name in self.__dataclass_fields__}


@dataclass
class PromptView:
    """What the model reads of one prompt, shared by every position generated after it."""

    window: np.ndarray  # (window,) tokens, slot d = d places before the prompt's end
    message: np.ndarray  # (message_slots,) the last message's first characters
    opening: np.ndarray  # (message_slots,) the conversation's first message's (PAD: it is the last)
    earlier: np.ndarray  # (message_slots,) the user's message before the last (PAD: none, or it is the first)
    message_length: int
    repeats: np.ndarray  # (window_pairs,) float: 1 where two window slots hold the same character
    rises: np.ndarray  # (neighbour_pairs,) float: +1 / -1 where a character's code is above / below the one before
    bag: np.ndarray  # (bag_chars + bag_words,) rows of the character and word bags
    shared: np.ndarray  # (2 * bag_words,) float: 1 where the last message's k-th word occurs in the opening / the message before the last
    counts: np.ndarray  # (pointer_slots,) occurrences of each slot's character in its word (0: none)
    word_counts: np.ndarray  # (pointer_slots,) at a word's first character, the word's occurrences in its message (0: elsewhere)
    neighbours: np.ndarray  # (pointer_slots, offsets) the prompt token k places before each slot
    links: np.ndarray  # (pointer_slots, LINKS) at a word's first character, the first and last characters of the words before and after it in its phrase (PAD: none)
    phrase_edges: np.ndarray  # (4, MAX_PHRASES) the first and last characters of the messages' phrases' last words, then of their first words (PAD: none)
    ordered: np.ndarray  # (pointer_slots, 2, words) uint64 bit sets: the slot's word's characters below / above its own
    ranked: np.ndarray  # (pointer_slots, RANKS) int: at a list item's characters, its place in the list's order from the first / last item, then by length, then at a word's the same for the number at each of ``BOUND_OFFSETS``, each as place * MAX_ITEM_CHARS + the character's offset in its word (-1 elsewhere)
    marked: np.ndarray  # (pointer_slots, MARKS) float: 1 where the slot has a mark (``MARKS``)
    word_keys: np.ndarray  # (pointer_slots,) int: the hashed row of the slot's word (-1: the slot is in none)
    place_keys: np.ndarray  # (pointer_slots,) int: the view and place in its message of the slot's word (-1: none)
    word_offsets: np.ndarray  # (pointer_slots,) int: the slot's place in its word, 0 for the first character (-1: in none)
    word_prefixes: np.ndarray  # (pointer_slots,) int: the hash (``PREFIX_WEIGHTS``) of the slot's word's characters before it (-1: in none)
    near_keys: np.ndarray  # (pointer_slots, NEAR_OFFSETS) int: at a word's first character, each neighbour's row of ``P_near`` (-1: none)
    numbers: np.ndarray  # (NUMBER_SLOTS,) float: the last message's first numbers, then the opening's (0 where none)
    number_context: np.ndarray  # (NUMBER_SLOTS, 4) int: each number's place, the token before it, the one after, and the hashed row of the word right after it (``word_rows``: none)
    number_count: int  # numbers in the last message
    number_diffs: np.ndarray  # (MAX_NUMBERS - 1,) float: the last message's numbers minus the one before each
    lone_number: float  # the last message's number where it holds only one, else 0
    comparisons: np.ndarray  # (COMPARISONS,) float: +1 / -1 where a pair's second number is above / below its first
    tally: np.ndarray  # (tally_width,) float: the last message's count of each character, each word and each class (``_tally``)


class ViewCache:
    """The views of the prompts read last, shared by a model and its copies: a view depends on
    the prompt and the model's shape, never on the parameters, and each prompt is read several
    times (the policy server reads it to sample, exploration to score a replacement, the learner
    to train on the samples). Views are read-only; the learner's thread and the policy server's
    event loop share the cache."""

    def __init__(self, size: int = 2048) -> None:
        self.size = size
        self._views: OrderedDict[tuple[int, ...], PromptView] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: tuple[int, ...]) -> PromptView | None:
        with self._lock:
            view = self._views.get(key)
            if view is not None:
                self._views.move_to_end(key)
            return view

    def put(self, key: tuple[int, ...], view: PromptView) -> None:
        for field in vars(view).values():
            if isinstance(field, np.ndarray):
                field.flags.writeable = False
        with self._lock:
            self._views[key] = view
            while len(self._views) > self.size:
                self._views.popitem(last=False)


@dataclass
class PromptFeatures:
    """The views of P prompts stacked into the inputs every row after them shares: built once
    for a batch of prompts, however many rows and token steps follow them (``Features`` has
    the fields' meanings)."""

    first_token: np.ndarray  # (P,) the prompt's last token (window slot 0): the previous token at the first step
    message_length: np.ndarray  # (P,) int: the last message's length
    prompt_rows: np.ndarray
    prompt_dense: np.ndarray
    repeats: np.ndarray
    slots: np.ndarray  # (P, pointer_slots) int
    neighbours: np.ndarray  # (P, pointer_slots, offsets) int: ``PromptView.neighbours``
    links: np.ndarray  # (P, pointer_slots, LINKS) int: ``PromptView.links``
    phrase_edges: np.ndarray  # (P, 4, MAX_PHRASES) int: ``PromptView.phrase_edges``
    counts: np.ndarray  # (P, pointer_slots) int
    word_counts: np.ndarray  # (P, pointer_slots) int: ``PromptView.word_counts``
    ordered: np.ndarray | None  # (P, pointer_slots, 2, words) uint64: ``PromptView.ordered`` (None: no prompts)
    ranked: np.ndarray  # (P, pointer_slots, RANKS) int: ``PromptView.ranked``
    marked: np.ndarray  # (P, pointer_slots, MARKS) float
    word_keys: np.ndarray  # (P, pointer_slots) int
    place_keys: np.ndarray  # (P, pointer_slots) int
    word_offsets: np.ndarray  # (P, pointer_slots) int
    word_prefixes: np.ndarray  # (P, pointer_slots) int
    near_keys: np.ndarray  # (P, pointer_slots, NEAR_OFFSETS) int: ``PromptView.near_keys``
    numbers: np.ndarray
    number_context: np.ndarray
    number_diffs: np.ndarray
    lone_number: np.ndarray
    tally: np.ndarray


@dataclass
class Features:
    """Model inputs for N positions, each predicting one next token, after P distinct prompts.

    What depends on the prompt alone is kept once per prompt: a batch has many positions per
    prompt (every token of every sample in a group), and this is most of the model's inputs.
    """

    prompt_of: np.ndarray  # (N,) int: the prompt each position follows
    prompt_rows: np.ndarray  # (P, rows) int: input-table rows of the prompt's views, summed
    prompt_dense: np.ndarray  # (P, window + HEADS * message_slots + neighbour_pairs + COMPARISONS + SIGNS + shared_words) float
    repeats: np.ndarray  # (P, window_pairs) float: which window slots hold the same character
    position_rows: np.ndarray  # (N, rows) int: input-table rows of the turn so far
    position_dense: np.ndarray  # (N, gen_slots) float: digit values of the generated slots
    step: np.ndarray  # (N,) int: generation step, capped at max_steps - 1
    slots: np.ndarray  # (N, pointer_slots) int: token of each pointer slot (PAD for none)
    used: np.ndarray  # (N, pointer_slots) float: 1 where the slot's token was emitted this turn
    word_used: np.ndarray  # (N, pointer_slots) float: 1 where the slot starts a word the turn has written whole
    counts: np.ndarray  # (N, pointer_slots) int: occurrences of the slot's character in its word
    word_counts: np.ndarray  # (N, pointer_slots) int: at a word's first character, its occurrences in its message
    follows: np.ndarray  # (N, pointer_slots, offsets + pairs) float: 1 where the slot is k after the previous token
    order: np.ndarray  # (N, pointer_slots, 2 + RANKS) float: 1 where the slot's character is the first / last unwritten one of its word, or is where the turn has reached in the item next in order (``RANKS``)
    marked: np.ndarray  # (N, pointer_slots, MARKS) float: the prompt's ``PromptView.marked``
    word_keys: np.ndarray  # (N, pointer_slots) int: the prompt's ``PromptView.word_keys`` at the slots the turn has reached in their words (-1 elsewhere)
    place_keys: np.ndarray  # (N, pointer_slots) int: the prompt's ``PromptView.place_keys``, likewise
    near_keys: np.ndarray  # (P, pointer_slots, NEAR_OFFSETS) int: the prompts' ``PromptView.near_keys``
    numbers: np.ndarray  # (P, NUMBER_SLOTS) float: the prompts' numbers
    number_context: np.ndarray  # (P, NUMBER_SLOTS, 4) int: their places, neighbouring tokens and the words after them
    number_diffs: np.ndarray  # (P, MAX_NUMBERS - 1) float: the last message's numbers minus the one before each
    lone_number: np.ndarray  # (P,) float: the last message's number where it holds only one, else 0
    tally: np.ndarray  # (P, tally_width) float: each prompt's tally (``PromptView.tally``)
    number_groups: list[NumberGroup]  # the rows whose reply so far can still become an integer, by reply

    def __len__(self) -> int:
        return int(self.step.shape[0])


@dataclass
class ForwardCache:
    features: Features
    normed: np.ndarray  # (N, H) each position's summed inputs, normalised over the units
    spread: np.ndarray  # (N, 1) what they were divided by
    pre: np.ndarray
    hidden: np.ndarray
    attention: np.ndarray  # (N, pointer_slots) pointer weights
    by_count: np.ndarray  # (N, max_count) attention summed per in-word count of the slots' characters
    by_word_count: np.ndarray  # (N, max_count) attention summed per in-message count of the words the slots start
    attended: np.ndarray  # (N, V) attention summed per token of the slots
    copy_map: np.ndarray  # (V, V) row a: the tokens attending a copies to (sums to 1)
    copied: np.ndarray  # (N, V) attended mass carried through the copy map
    switch: np.ndarray  # (N,) the share of each letter's copied mass the case switch moves to its other case
    switched: np.ndarray  # (N, V) the copied mass after the case switch
    gate: np.ndarray  # (N, V) log(COPY_FLOOR + switched)
    pointer_gain: np.ndarray  # (N,) the step's pointer gain, with its fixed gain
    text_probs: np.ndarray  # (N, V) the distribution before the number path is mixed in
    number_shares: list[LogShares]  # per number group
    number_mix: np.ndarray  # (N,) the number path's share of each row (0 where it does not apply)
    number_probs: list[np.ndarray]  # per number group, (rows, next tokens): the number path's distribution
    probs: np.ndarray
    log_probs: np.ndarray  # log of probs, exact where probs underflow (-inf only where masked)
    temperature: float


class PolicyModel:
    """Parameters plus forward, sampling-ready log-probabilities and the hand-written backward."""

    def __init__(self, params: Params, shape: ModelShape, tokenizer: CharTokenizer, views: ViewCache | None = None) -> None:
        self.params = params
        self.shape = shape
        self.tokenizer = tokenizer
        self.views = ViewCache() if views is None else views
        dtype = params["W2"].dtype
        values = [0.0 if v is None else (v - 4.5) / 3.0 for v in tokenizer.digit_values]
        self._digit_value = np.asarray(values, dtype=dtype)
        allowed = np.zeros(shape.vocab_size, dtype=bool)
        allowed[tokenizer.generatable_ids()] = True
        self.allowed = allowed
        self._offsets = shape.offsets
        self.absent_row = self._offsets["absent"]
        is_word_char = np.zeros(shape.vocab_size, dtype=bool)
        for token in range(shape.vocab_size):
            is_word_char[token] = tokenizer.token_text(token).isalnum() and token >= tokenizer.first_char_id
        self._is_word_char = is_word_char
        self._is_link_char = np.zeros(shape.vocab_size, dtype=bool)
        self._is_link_char[[tokenizer.encode(c)[0] for c in LINK_CHARACTERS]] = True
        self._is_tight_link = np.zeros(shape.vocab_size, dtype=bool)
        self._is_tight_link[tokenizer.encode(TIGHT_LINKS)] = True
        self._is_digit = np.asarray([value is not None for value in tokenizer.digit_values])
        self._zero = tokenizer.encode("0")[0]
        self._comma = tokenizer.encode(",")[0]
        self._space = tokenizer.encode(" ")[0]
        self._last_item_words = tuple(tuple(tokenizer.encode(word)) for word in LAST_ITEM_WORDS)
        self._minus = tokenizer.encode("-")[0]
        self._point = tokenizer.encode(".")[0]
        self._spelling = integer_spelling(tokenizer)
        texts = [tokenizer.token_text(t) if t >= tokenizer.first_char_id else "" for t in range(shape.vocab_size)]
        self._char_classes = np.asarray(  # the tally's letters and capitals: (2, V)
            [[test(text) for text in texts] for test in (str.isalpha, str.isupper)], dtype=np.float64
        )
        # 1 for letters, 2 for digits, 0 for anything else: which characters compare by code
        self._char_kind = np.asarray(
            [0 if not is_word_char[t] else 2 if tokenizer.token_text(t).isdigit() else 1 for t in range(shape.vocab_size)], dtype=np.int64
        )
        # R maps an attended character to the characters a fixed code distance away: entry
        # [a, b] of the token-to-token map it makes is R[b - a], for characters a and b only.
        # Its last two entries map a letter to itself in the other case, from a lowercase letter
        # and from an uppercase one (``_case_pairs``).
        v, first = shape.vocab_size, tokenizer.first_char_id
        codes = np.arange(v)
        self._offset_index = codes[None, :] - codes[:, None] + v - 1
        self._offset_valid = (codes[:, None] >= first) & (codes[None, :] >= first)
        first_case_entry = 2 * v - 1  # R's entries after its code distances
        self._case_pairs = _case_pairs(tokenizer, first_case_entry)
        # each token's other case (itself for what is not a letter), and its lowercase form
        letters, partners, entries = self._case_pairs
        self._other_case = codes.copy()
        self._other_case[letters] = partners
        self._folded = codes.copy()
        capitals = entries == first_case_entry + 1  # the entry from an uppercase letter
        self._folded[letters[capitals]] = partners[capitals]
        self._window_pairs = np.triu_indices(shape.window, k=1)  # the slot pairs of ``repeats``
        self._neighbour_sources = _neighbour_sources(shape)
        # each character slot's view: 0 the window, then the HEADS messages' (the end slot's is -1)
        views = [np.zeros(shape.window), np.repeat(np.arange(1, HEADS + 1), shape.message_slots), [-1]]
        self._slot_views = np.concatenate(views).astype(np.int64)

    @property
    def dtype(self) -> np.dtype:
        return self.params["W2"].dtype

    @property
    def is_word_char(self) -> np.ndarray:
        """(V,) bool: which tokens are letters or digits, the characters words are made of."""
        return self._is_word_char

    def lists(self, tokens: Sequence[int], words: list[tuple[int, int]] | None = None) -> list[TokenList]:
        """The lists of ``tokens`` (``lists.find_lists``; ``words``: their spans, when known)."""
        return find_lists(tokens, self._is_word_char, self._comma, words, last_item_words=self._last_item_words, space=self._space)

    def phrases(self, tokens: Sequence[int]) -> list[list[tuple[int, int]]]:
        """The phrases of ``tokens``, each as its words' (start, stop) spans (``phrases.py``)."""
        tokens = np.asarray(tokens, dtype=np.int64)
        return find_phrases(tokens, self._word_spans(tokens), self._is_link_char, self._is_tight_link)

    # -- construction -------------------------------------------------------------------------

    @classmethod
    def initialise(
        cls,
        tokenizer: CharTokenizer,
        *,
        hidden_size: int = 64,
        seed: int = 0,
        dtype: type = np.float32,
        copy_prior: float = 1.0,
        end_prior: float = 2.0,
        recency_slope: float = 0.15,
        numeric_scale: float = 0.2,
        span_prior: float = 1.5,
        **shape_fields: int,
    ) -> PolicyModel:
        """A fresh policy. Its initial distribution prefers answers built from the prompt's
        characters (``copy_prior``, the pointer's gain) and short answers (``end_prior``: not
        ending before the first token, ending after any other): RL from scratch needs some
        answers that score before it learns anything, and short ones are the likeliest to.
        ``recency_slope`` is the pointer's initial preference for the prompt's last tokens, and
        ``span_prior`` (nats) its initial preference for the slot after the one just copied, so
        the prompt's words are likelier answers than its scattered characters.
        ``shape_fields`` override ``ModelShape``'s sizes."""
        shape = ModelShape(tokenizer.vocab_size, hidden_size, **shape_fields)
        rng = np.random.default_rng(seed)
        v, h = shape.vocab_size, hidden_size
        sparse_count = shape.window + HEADS * shape.message_slots + shape.gen_slots + 3 + shape.bag_chars + shape.bag_words
        params: Params = {
            "W_in": rng.normal(0.0, 1.0 / np.sqrt(sparse_count), (shape.offsets["total"], h)),
            "U": rng.normal(0.0, numeric_scale, (shape.num_dense - shape.neighbour_pairs - SIGNS - shape.shared_words, h)),
            "U_same": np.zeros((shape.window_pairs, h)),
            "b1": np.zeros(h),
            "W2": rng.normal(0.0, 0.1 / np.sqrt(h), (h, v)),
            "b2": np.zeros(v),
            "B_step": np.zeros((shape.max_steps, v)),
            "P_pos": np.zeros((shape.max_steps, shape.pointer_slots - 1)),  # per step, for the character slots
            "P_key": np.zeros(v),
            "P_used": np.zeros(1),
            "P_order": np.zeros(2 + RANKS),  # for a slot whose character is the first / last of its word left to write, or that starts the next item in order
            "P_mark": np.zeros(MARKS),  # for a slot with each of the marks (``MARKS``)
            "P_gain": np.full(shape.max_steps, copy_prior),
            "P_rel": np.zeros(len(NEIGHBOUR_OFFSETS) + PAIR_FEATURES + LINK_FEATURES),
            # The end slot's neighbour scores and bias, learned on their own: whether a span
            # copied up to the last message's end ends the answer too depends on the task.
            "P_end": np.zeros(len(NEIGHBOUR_OFFSETS) + PAIR_FEATURES + LINK_FEATURES + 1),
            "M": np.zeros((v, v)),  # what an attended token adds to other tokens' logits
            # the case switch's logit per step, and its query from the hidden layer
            "P_case": np.full(shape.max_steps, np.log(CASE_SWITCH_PRIOR / (1.0 - CASE_SWITCH_PRIOR))),
            "Q_case": np.zeros(h),
            "R": np.zeros(2 * v - 1 + 2),  # the same by code distance, then by case: shared by every character
            "C": np.zeros((shape.max_count, v)),  # what attending a character that occurs k times in its word adds
            "C_word": np.zeros((shape.max_count, v)),  # what attending the start of a word its message holds k times adds
            # The pointer's query from the hidden layer (zero at first: it starts as without):
            "Q_pos": np.zeros((h, shape.pointer_slots - 1)),  # which slots to read, by what was read
            "Q_key": np.zeros((h, v)),  # which characters to look for, by what was read
            # which words to start copying, by the word (hashed as the bag's rows) and by what was read
            "P_word": np.zeros(shape.word_rows),
            "Q_word": np.zeros((shape.word_rows, h)),
            # which words to start copying, by the word's place in its message, in each view
            "P_place": np.zeros(PLACE_KEYS),
            "Q_place": np.zeros((PLACE_KEYS, h)),
            # The number path (``trainer/numbers.py``): a value from the prompt's numbers.
            "N_place": np.zeros(NUMBER_SLOTS),
            "N_before": np.zeros(v),
            "N_after": np.zeros(v),
            # per hashed word right after a number, and a last row for none (never moved)
            "N_word": np.zeros(shape.word_rows + 1),
            "N_bias": np.zeros(1),
            "N_diff": np.zeros(MAX_NUMBERS - 1),  # on the last message's differences of neighbouring numbers
            # on the last message's number when it is the only one: a reply to one number starts as
            # that number, as the pointer starts out copying the prompt's characters
            "N_lone": np.ones(1),
            "N_tally": np.zeros(v),  # per character of the tally
            "N_words": np.zeros(shape.word_rows),  # per hashed word of the tally
            "N_classes": np.zeros(TALLY_CLASSES),  # per class of the tally
            # not trained: the mean tally of the prompts trained on so far, and how many there were
            "N_tally_mean": np.zeros(shape.tally_width),
            "N_tally_seen": np.zeros(1),
            "N_spread": np.full(1, np.log(NUMBER_SPREAD_PRIOR)),
            "N_mix": np.full(shape.max_steps, np.log(NUMBER_MIX_PRIOR / (1.0 - NUMBER_MIX_PRIOR))),
            "U_level": np.zeros((NUMBER_SLOTS, len(NUMBER_LEVELS), h)),  # per number slot and level
            "L_span": np.zeros((NUMBER_SLOTS * int(SPAN_OFFSETS[-1]), v)),  # per number slot, span width and span
            "P_near": np.zeros(len(NEAR_OFFSETS) * shape.word_rows),  # per neighbour offset and hashed word
            "P_word_used": np.zeros(1),  # for a slot starting a word the turn has written whole
        }
        # A recency prior, as in ALiBi: the pointer starts out favouring the prompt's last
        # tokens, falling off linearly with distance; the last message's start view starts below
        # them, and a conversation's earlier messages further below.
        distance = np.concatenate(
            [np.arange(shape.window), np.full(shape.message_slots, shape.window / 2), np.full(2 * shape.message_slots, shape.window)]
        )
        params["P_pos"][:] = -recency_slope * distance
        params["B_step"][0, END] = -end_prior
        params["B_step"][1:, END] = end_prior
        params["W_in"][shape.offsets["absent"]] = 0.0
        # the rises (after the digits), the signs and the shared words (after the comparisons)
        # start at zero
        digits = shape.window + HEADS * shape.message_slots
        drawn = np.split(params["U"], [digits, digits + COMPARISONS])
        params["U"] = np.concatenate(
            [drawn[0], np.zeros((shape.neighbour_pairs, h)), drawn[1], np.zeros((SIGNS + shape.shared_words, h)), drawn[2]]
        )
        params["P_rel"][NEIGHBOUR_OFFSETS.index(1)] = span_prior
        for key, gain in GAINS.items():
            params[key] = params[key] / gain
        return cls({k: np.ascontiguousarray(a, dtype=dtype) for k, a in params.items()}, shape, tokenizer)

    def copy(self) -> PolicyModel:
        """An independent snapshot (the policy server samples from one while the trainer steps)."""
        return PolicyModel({k: a.copy() for k, a in self.params.items()}, self.shape, self.tokenizer, self.views)

    # -- features -------------------------------------------------------------------------------

    def prompt_view(self, prompt: Sequence[int]) -> PromptView:
        """What the model reads of ``prompt`` (from the cache when it was read lately)."""
        key = tuple(prompt)
        view = self.views.get(key)
        if view is None:
            view = self._read(np.asarray(key, dtype=np.int64))
            self.views.put(key, view)
        return view

    def _read(self, tokens: np.ndarray) -> PromptView:
        s = self.shape
        window = np.full(s.window, PAD, dtype=np.int64)
        tail = tokens[-s.window :][::-1]
        window[: len(tail)] = tail
        start, stop = last_message_bounds(tokens)
        first_start, first_stop = first_message_bounds(tokens)
        if first_stop >= stop:  # one message so far: the last-message view already reads it
            first_start = first_stop
        earlier_start, earlier_stop = earlier_message_bounds(tokens)
        if earlier_start <= first_start:  # no user message between the first and the last
            earlier_start = earlier_stop
        # where in ``tokens`` each character slot reads (-1: nowhere), for what is known per token
        source = np.full(s.pointer_slots, -1, dtype=np.int64)
        back = np.arange(len(tokens))[-s.window :][::-1]
        source[: len(back)] = back
        at = s.window
        heads = []
        head_spans = self._head_spans(start, stop, [(first_start, first_stop), (earlier_start, earlier_stop)])
        for begin, end in head_spans:
            head = np.full(s.message_slots, PAD, dtype=np.int64)
            content = tokens[begin:end][: s.message_slots]
            head[: len(content)] = content
            heads.append(head)
            source[at : at + len(content)] = np.arange(begin, begin + len(content))
            at += s.message_slots
        read = source >= 0
        # found once, read by several of the helpers below
        message_of = _message_starts(tokens)
        words = self._word_spans(tokens)
        counts = np.zeros(s.pointer_slots, dtype=np.int64)
        counts[read] = self._counts_in_word(tokens)[source[read]]
        ordered = np.zeros((s.pointer_slots, 2, s.vocab_size), dtype=bool)
        ordered[read] = self._order_in_word(tokens, words)[source[read]]
        ordered = _token_bits(ordered)
        ranked = np.full((s.pointer_slots, RANKS), -1, dtype=np.int64)
        lists = self.lists(tokens.tolist(), words)
        ranked[read] = np.concatenate([self._list_ranks(tokens, lists), self._bound_ranks(tokens, words, message_of)], axis=1)[source[read]]
        message, opening, earlier = heads
        content = tokens[start:stop]
        opening_tokens = tokens[first_start:first_stop]
        # every word of the prompt hashed once: the pointer's word keys, the bag's word rows, the
        # words shared between messages and the words after numbers all read these
        word_starts, hashed = self._hashed_words(tokens)
        word_rows = self._word_starts(len(tokens), word_starts, hashed)
        numbers, number_context, number_count, opening_count = self._numbers(content, opening_tokens)
        number_words = np.concatenate([
            self._words_after_numbers(word_rows[start:stop], content),
            self._words_after_numbers(word_rows[first_start:first_stop], opening_tokens),
        ])
        number_context = np.concatenate([number_context, number_words[:, None]], axis=1)
        places = self._places(tokens, message_of)
        marked = np.zeros((s.pointer_slots, MARKS), dtype=self.dtype)
        named = numbers[: min(number_count, MAX_NUMBERS)]
        marked[read, :2] = np.isin(places, named[named > 0])[source[read]]
        links = np.full((s.pointer_slots, LINKS), PAD, dtype=np.int64)
        read_links, phrase_edges = self._phrase_inputs(tokens, words, [(start, stop), (first_start, first_stop), (earlier_start, earlier_stop)])
        links[read] = read_links[source[read]]
        held = self._word_counts(tokens, word_starts, hashed, message_of)
        marked[read, 2:4] = self._repeated(tokens, lists, held)[source[read]]
        marked[read, 4:8] = self._shared_affixes(tokens, words, message_of)[source[read]]
        near, asked = self._near_words(tokens, word_starts, hashed, message_of, start, stop)
        near_keys = np.full((s.pointer_slots, len(NEAR_OFFSETS)), -1, dtype=np.int64)
        near_keys[read] = near[source[read]]
        marked[read, 8 : 8 + len(NEAR_OFFSETS)] = asked[source[read]]
        marked[read, -1] = self._said_elsewhere(tokens, word_starts, hashed, message_of)[source[read]]
        # The pointer finds a word and reads its count, as it reads a character's count in its
        # word: "how many red things" is the pointer on "red" and a map from counts to tokens,
        # whichever word is asked about. Numbers are values, not words to count (as in the
        # tally): counted, their rows took the attention on the numbers' first digits, and
        # sums of two numbers were learned later (0.75 at the last step, in process).
        word_counts = np.zeros(s.pointer_slots, dtype=np.int64)
        word_counts[read] = np.where(self._is_digit[tokens], 0, held)[source[read]]
        last_words = _words_between(word_starts, hashed, start, stop)
        # every character of a word carries the word's keys and its place in the word: a row
        # scores them only where the turn has reached in the word (``_assemble``)
        offsets = places[:, 0] - 1
        word_offsets = np.full(s.pointer_slots, -1, dtype=np.int64)
        word_offsets[read] = offsets[source[read]]
        word_prefixes = np.full(s.pointer_slots, -1, dtype=np.int64)
        word_prefixes[read] = self._word_prefixes(tokens, offsets)[source[read]]
        word_keys = np.full(s.pointer_slots, -1, dtype=np.int64)
        word_keys[read] = np.where(offsets >= 0, word_rows[np.arange(len(tokens)) - np.maximum(offsets, 0)], -1)[source[read]]
        place_keys = np.full(s.pointer_slots, -1, dtype=np.int64)
        slot_places = places[source[read]]
        keyed = (slot_places[:, 0] >= 1) & (slot_places[:, 1] <= WORD_PLACES)
        place_keys[read] = np.where(keyed, self._slot_views[read] * WORD_PLACES + slot_places[:, 1] - 1, -1)
        number_diffs = neighbour_differences(numbers, number_count)
        comparisons = np.concatenate(
            [pair_comparisons(numbers[:MAX_NUMBERS], number_count), pair_comparisons(numbers[MAX_NUMBERS:], opening_count)]
        )
        tail = np.full(END_SLOT_TAIL, PAD, dtype=np.int64)  # the last message's last tokens, last first
        tail[: min(END_SLOT_TAIL, len(content))] = content[::-1][:END_SLOT_TAIL]
        rises = np.concatenate(  # the window reads backwards: slot d + 1 comes before slot d
            [self._rises(window[1:], window[:-1]), *(self._rises(head[:-1], head[1:]) for head in heads)]
        )
        return PromptView(
            window, message, opening, earlier, len(content), self._repeats(window), rises, self._bag_rows(content, last_words),
            self._shared_words(
                last_words,
                _words_between(word_starts, hashed, first_start, first_stop),
                _words_between(word_starts, hashed, earlier_start, earlier_stop),
            ),
            np.minimum(counts, s.max_count - 1), np.minimum(word_counts, s.max_count - 1),
            self._join_views(np.concatenate([window, *heads, tail, [PAD]])[self._neighbour_sources], heads, head_spans, start),
            links, phrase_edges,
            ordered, ranked, marked, word_keys, place_keys, word_offsets, word_prefixes, near_keys, numbers, number_context, number_count, number_diffs, float(numbers[0]) if number_count == 1 else 0.0,
            comparisons, self._tally(content, word_rows[start:stop]),
        )

    def _head_spans(self, start: int, stop: int, others: list[tuple[int, int]]) -> list[tuple[int, int]]:
        """Where each message view reads from: the last message (``[start, stop)``) first, then
        the ``others`` (the opening and the message before the last). A view whose message the
        prompt lacks reads the last message on where the views before stopped, so a long
        question (a forecast of five days, a list of records) is read whole, not only its first
        ``message_slots`` characters and its end, in a single turn or a short conversation."""
        spans = [(start, stop)]
        read_to = start + self.shape.message_slots
        for begin, end in others:
            if begin >= end and read_to < stop:
                begin, end = read_to, stop
                read_to += self.shape.message_slots
            spans.append((begin, end))
        return spans

    def _join_views(self, neighbours: np.ndarray, heads: list[np.ndarray], spans: list[tuple[int, int]], start: int) -> np.ndarray:
        """``neighbours`` (``_neighbour_sources``' reading) where a view goes on reading the last
        message (``_head_spans``): the characters just across the join, in the view before or
        after, instead of nothing, so a word the join cuts in two is copied as any other."""
        m, w = self.shape.message_slots, self.shape.window
        chain = [view for view, (begin, _) in enumerate(spans) if begin >= start and (begin - start) % m == 0]
        for before, after in zip(chain, chain[1:]):
            for column, k in enumerate(NEIGHBOUR_OFFSETS):
                for j in range(abs(k)):
                    if k > 0:  # the first characters of the later view, k places after the earlier's last
                        neighbours[w + after * m + j, column] = heads[before][m - k + j]
                    else:  # the last characters of the earlier view, -k places before the later's first
                        neighbours[w + before * m + m + k + j, column] = heads[after][j]
        return neighbours

    def _tally(self, content: np.ndarray, word_rows: np.ndarray) -> np.ndarray:
        """(tally_width,): how often each character occurs in ``content``, digits left at 0,
        then how often each hashed word does (``word_rows``, ``_word_starts`` over the same
        tokens), numbers left out, then how many letters, uppercase letters, digits of codes and
        numbers it holds (``TALLY_CLASSES``). The number path reads a number's digits as the
        value they spell; a count per digit, or per number, would give it a weight per value, a
        table that holds only for the numbers it was trained on (with one, number answers held
        less well with the servers' lag: ``docs/design-notes.md``). How many numbers there are is
        one count, and so is how many digits the codes hold (``numbers.number_runs``: "k4p9"),
        which are characters, not values; the digits of numbers are not counted, since how many
        there are follows their values and only made the value noisier where the answer is
        computed from them. A count per word makes "how many of these are animals" or "how many
        replies say yes" one weight per word, and a count per class of character makes "how
        many letters" one weight, not one per letter."""
        counts = np.bincount(content, minlength=self.shape.vocab_size).astype(np.float64)
        digit = self._is_digit[content]
        runs = number_runs(content, self._is_digit, self._is_word_char, self._point)
        in_numbers = sum(int(digit[begin:end].sum()) for begin, end in runs)
        classes = np.append(self._char_classes @ counts, [np.count_nonzero(digit) - in_numbers, len(runs)])
        counts[self._is_digit] = 0.0
        words = word_rows[(word_rows >= 0) & ~digit]
        return np.concatenate([counts, np.bincount(words, minlength=self.shape.word_rows).astype(np.float64), classes])

    def _numbers(self, content: np.ndarray, opening: np.ndarray) -> tuple[np.ndarray, np.ndarray, int, int]:
        """The number path's inputs: the last message's numbers, then the conversation's
        opening message's (its places after the last message's; none when the prompt holds
        one message), and how many each holds."""
        signs_and_points = (self._minus, self._is_word_char, self._point)  # what makes a number negative, or a fraction
        numbers, context, count = read_numbers(content, self._is_digit, self._zero, *signs_and_points)
        opening_numbers, opening_context, opening_count = read_numbers(opening, self._is_digit, self._zero, *signs_and_points)
        opening_context[:, 0] += MAX_NUMBERS
        return np.concatenate([numbers, opening_numbers]), np.concatenate([context, opening_context]), count, opening_count

    def _words_after_numbers(self, word_rows: np.ndarray, tokens: np.ndarray) -> np.ndarray:
        """(MAX_NUMBERS,): for each of the first numbers of ``tokens`` (one message, as
        ``read_numbers`` finds them), the hashed row of the word right after it, past one space
        ("4 cows", "165 cm", "3 apples"), read from ``word_rows`` (``_word_starts`` over the same
        tokens); ``shape.word_rows`` where no word follows. The number path weighs a number by
        that word too, so a value counted in units the prompt names ("legs per animal", "minutes
        per hour") is one weight per unit."""
        out = np.full(MAX_NUMBERS, self.shape.word_rows, dtype=np.int64)
        for k, (_, end) in enumerate(number_runs(tokens, self._is_digit, self._is_word_char, self._point)[:MAX_NUMBERS]):
            at = end + 1 if end < len(tokens) and tokens[end] == self._space else end
            if at < len(tokens) and word_rows[at] >= 0 and not self._is_digit[tokens[at]]:
                out[k] = word_rows[at]
        return out

    def _rises(self, before: np.ndarray, after: np.ndarray) -> np.ndarray:
        """+1 where ``after``'s character comes later in code order than ``before``'s, -1 where
        earlier, 0 where they are equal or not both letters or both digits: whether a run of
        characters goes up or down (letters in alphabetical order, digits increasing)."""
        kind = self._char_kind
        comparable = (kind[before] > 0) & (kind[before] == kind[after])
        return np.where(comparable, np.sign(after - before), 0).astype(self.dtype)

    def _repeats(self, window: np.ndarray) -> np.ndarray:
        """(window_pairs,): 1 where two window slots hold the same character: which parts of the
        prompt's end repeat one another (a letter asked about and its occurrences)."""
        first, second = self._window_pairs
        left, right = window[first], window[second]
        return ((left == right) & (left >= self.tokenizer.first_char_id)).astype(self.dtype)

    def _counts_in_word(self, tokens: np.ndarray) -> np.ndarray:
        """For each token, how often it occurs in its word (a maximal run of letters and
        digits); 0 outside words."""
        out = np.zeros(len(tokens), dtype=np.int64)
        in_word = self._is_word_char[tokens]
        if not in_word.any():
            return out
        # one count over (word number, token) keys, not one per word: this runs per prompt
        starts = in_word.copy()
        starts[1:] &= ~in_word[:-1]
        word_number = np.cumsum(starts)
        keys = word_number[in_word] * self.shape.vocab_size + tokens[in_word]
        out[in_word] = np.bincount(keys)[keys]
        return out

    @staticmethod
    def _word_counts(tokens: np.ndarray, word_starts: list[int], hashed: list[int], message_of: np.ndarray) -> np.ndarray:
        """(len(tokens),): at each word's first token, how many times its message holds the word
        (the prompt's hashed words, ``_hashed_words``; ``message_of``: ``_message_starts``); 0
        elsewhere."""
        out = np.zeros(len(tokens), dtype=np.int64)
        words = list(zip(message_of[word_starts].tolist(), hashed))
        held = Counter(words)
        out[word_starts] = [held[word] for word in words]
        return out

    def _said_elsewhere(self, tokens: np.ndarray, word_starts: list[int], hashed: list[int], message_of: np.ndarray) -> np.ndarray:
        """(len(tokens),): 1 at the first token of a word that another user or system message of
        the prompt holds (the prompt's hashed words, ``_hashed_words``; ``message_of``:
        ``_message_starts``); 0 elsewhere. The assistant's turns are left out: they are the
        policy's own samples, and a word it echoed would look said before."""
        out = np.zeros(len(tokens), dtype=self.dtype)
        if not word_starts:
            return out
        messages = message_of[word_starts]
        spoken = tokens[messages] != ROLE_TOKENS["assistant"]
        holders: dict[int, set[int]] = {}  # per word, the user and system messages holding it
        for message, word, counted in zip(messages.tolist(), hashed, spoken.tolist()):
            if counted:
                holders.setdefault(word, set()).add(message)
        out[word_starts] = [bool(holders.get(word, set()) - {message}) for message, word in zip(messages.tolist(), hashed)]
        return out

    def _shared_words(self, last: list[int], opening: list[int], earlier: list[int]) -> np.ndarray:
        """(2 * bag_words,): 1 where the last message's k-th word (of its first ``bag_words``)
        also occurs in the opening message, then in the user's message before the last (each
        message's hashed words, ``_hashed_words``): whether the thing asked about now is the one
        a message before spoke of is one input, not a relation between character slots."""
        keys = last[: self.shape.bag_words]
        out = np.zeros(2 * self.shape.bag_words, dtype=self.dtype)
        for half, other in enumerate((opening, earlier)):
            seen = set(other)
            out[half * self.shape.bag_words : half * self.shape.bag_words + len(keys)] = [key in seen for key in keys]
        return out

    def _places(self, tokens: np.ndarray, message_of: np.ndarray) -> np.ndarray:
        """(len(tokens), 2): for each token in a word (a maximal run of letters and digits), its
        place in the word and the word's place in its message (``message_of``:
        ``_message_starts``), counted from 1; 0 outside words."""
        out = np.zeros((len(tokens), 2), dtype=np.int64)
        in_word = self._is_word_char[tokens]
        if not in_word.any():
            return out
        starts = in_word.copy()
        starts[1:] &= ~in_word[:-1]
        at = np.arange(len(tokens))
        word_start = np.maximum.accumulate(np.where(starts, at, 0))
        out[:, 0] = np.where(in_word, at - word_start + 1, 0)
        # words so far, less those before the message's role token: the word's place in its message
        words = np.cumsum(starts)
        out[:, 1] = np.where(in_word, words - words[message_of] + starts[message_of], 0)
        return out

    def _word_prefixes(self, tokens: np.ndarray, offsets: np.ndarray) -> np.ndarray:
        """(len(tokens),): at each token of a word (``offsets``: its place in the word, -1
        outside words), the hash (``PREFIX_WEIGHTS``) of the word's tokens before it (0 at its
        first); -1 outside words."""
        placed = np.minimum(offsets, MAX_ITEM_CHARS - 1)
        terms = np.where(offsets >= 0, (self._folded[tokens] + 1) * PREFIX_WEIGHTS[placed], 0)
        upto = np.cumsum(terms)  # upto[j] - terms[j]: the terms before j
        start = np.arange(len(tokens)) - np.maximum(offsets, 0)
        before = upto - terms - (upto[start] - terms[start])
        return np.where(offsets >= 0, before, -1)

    def _prefix_hash(self, replies: np.ndarray, lengths: np.ndarray) -> np.ndarray:
        """(N,): for each reply (``replies`` (N, T)), the hash of its last ``lengths[i]`` tokens,
        as ``_word_prefixes`` hashes a word's first characters."""
        t = replies.shape[1]
        placed = np.arange(t)[None, :] - (t - lengths)[:, None]  # each token's place in that run
        terms = (self._folded[replies] + 1) * PREFIX_WEIGHTS[np.clip(placed, 0, MAX_ITEM_CHARS - 1)]
        return np.where(placed >= 0, terms, 0).sum(axis=1)

    def _word_starts(self, length: int, starts: list[int], keys: list[int]) -> np.ndarray:
        """(length,): at each word's first token, the word's hashed row (as the bag hashes it);
        -1 elsewhere. ``starts`` and ``keys`` are the prompt's words (``_hashed_words``)."""
        out = np.full(length, -1, dtype=np.int64)
        if starts:
            out[np.asarray(starts)] = _hash_rows(np.asarray(keys, dtype=np.int64), self.shape.word_rows)
        return out

    def _hashed_words(self, tokens: np.ndarray) -> tuple[list[int], list[int]]:
        """For each word of ``tokens`` (a maximal run of letters and digits), in order, the index
        of its first token and a key hashed from its tokens (the bag's word rows and the
        pointer's word keys both come from it)."""
        starts, keys = [], []
        key, start = 0, 0
        for at, token in enumerate([*tokens.tolist(), PAD]):
            if self._is_word_char[token]:
                if not key:
                    start = at
                key = (key * WORD_HASH_BASE + token) & WORD_HASH_MASK
            elif key:
                starts.append(start)
                keys.append(key)
                key = 0
        return starts, keys

    def _list_ranks(self, tokens: np.ndarray, lists: list[TokenList]) -> np.ndarray:
        """(len(tokens), 4): at each list item's tokens, its place in its list's order counted
        from the first item and from the last (``lists.TokenList.ranks``), then in order of
        length (``length_ranks``), from the shortest and from the longest (``_rank_word``);
        -1 elsewhere."""
        out = np.full((len(tokens), 4), -1, dtype=np.int64)
        for found in lists:
            for column, ranks in ((0, found.ranks(tokens, self.tokenizer)), (2, found.length_ranks())):
                for (start, stop), rank in zip(found.items, ranks):
                    _rank_word(out, start, stop, column, (rank, len(ranks) - 1 - rank))
        return out

    def _bound_ranks(self, tokens: np.ndarray, spans: list[tuple[int, int]], message_of: np.ndarray) -> np.ndarray:
        """(len(tokens), 2 * len(BOUND_OFFSETS)): at the first token of a word that is not a
        number, for each offset of ``BOUND_OFFSETS``, the place in order (by value, from the
        smallest and from the largest) among its message's numbers of the number that far from
        it; -1 where there is none, or where the message holds fewer than two numbers. A number
        with a fraction ("12.4") is one word here, as ``numbers.number_runs`` reads it.
        (``spans``: the words, ``_word_spans``; ``message_of``: ``_message_starts``.)"""
        out = np.full((len(tokens), 2 * len(BOUND_OFFSETS)), -1, dtype=np.int64)
        number_ends = {begin: end for begin, end in number_runs(tokens, self._is_digit, self._is_word_char, self._point)}
        if len(number_ends) < 2:  # no message holds two numbers
            return out
        messages: dict[int, list[tuple[int, int]]] = {}
        message_at = message_of.tolist()
        # digits before each token: a word is all digits when it holds as many as it is long
        digits_before = [0, *np.cumsum(self._is_digit[tokens]).tolist()]
        for start, stop in spans:
            words = messages.setdefault(message_at[start], [])
            if words and words[-1][1] < stop <= number_ends.get(words[-1][0], -1):
                words[-1] = (words[-1][0], stop)  # the fraction after a number's point
            else:
                words.append((start, stop))
        for words in messages.values():
            is_number = [digits_before[stop] - digits_before[start] == stop - start or stop == number_ends.get(start) for start, stop in words]
            numbers = [k for k, number in enumerate(is_number) if number]
            if len(numbers) < 2:
                continue
            value = {k: float(self.tokenizer.decode(tokens[words[k][0] : words[k][1]].tolist())) for k in numbers}
            ranks = {k: rank for rank, k in enumerate(sorted(numbers, key=lambda k: (value[k], k)))}
            for column, offset in enumerate(BOUND_OFFSETS):
                for k, rank in ranks.items():
                    word = k + offset
                    if 0 <= word < len(words) and not is_number[word]:
                        _rank_word(out, *words[word], 2 * column, (rank, len(numbers) - 1 - rank))
        return out

    def _repeated(self, tokens: np.ndarray, lists: list[TokenList], word_counts: np.ndarray) -> np.ndarray:
        """(len(tokens), 2): 1 at the first token of a list item that another item of its list
        repeats, and at the first token of a word that its message holds more than once (the
        prompt's ``lists``, and its ``_word_counts``); 0 elsewhere."""
        out = np.zeros((len(tokens), 2), dtype=self.dtype)
        listed = tokens.tolist()
        for found in lists:
            items = Counter(tuple(listed[start:stop]) for start, stop in found.items)
            for start, stop in found.items:
                out[start, 0] = items[tuple(listed[start:stop])] > 1
        out[:, 1] = word_counts > 1
        return out

    def _phrase_inputs(self, tokens: np.ndarray, spans: list[tuple[int, int]], bounds: list[tuple[int, int]]) -> tuple[np.ndarray, np.ndarray]:
        """What the pointer reads of the prompt's phrases (``phrases.py``; ``spans``: its words):

        * (len(tokens), LINKS): at the first token of a word, the first and last tokens of the
          word before it in its phrase, then of the word after it; PAD elsewhere and where
          there is none;
        * (4, MAX_PHRASES): the first and last tokens of the last word of each phrase of the
          messages ``bounds`` give (the last message first), then of each phrase's first word;
          PAD after the first MAX_PHRASES phrases."""
        links = np.full((len(tokens), LINKS), PAD, dtype=np.int64)
        edges = np.full((4, MAX_PHRASES), PAD, dtype=np.int64)
        if not spans:
            return links, edges
        starts, stops = np.asarray(spans).T
        joined = linked_gaps(tokens, stops[:-1], starts[1:], self._is_link_char, self._is_tight_link)
        before, after = starts[:-1][joined], starts[1:][joined]
        links[after, 0], links[after, 1] = tokens[before], tokens[stops[:-1][joined] - 1]
        links[before, 2], links[before, 3] = tokens[after], tokens[stops[1:][joined] - 1]
        # each phrase's first and last word, as indices into ``spans``
        firsts = np.flatnonzero(np.concatenate(([True], ~joined)))
        lasts = np.append(firsts[1:] - 1, len(spans) - 1)
        order = [k for begin, end in dict.fromkeys(bounds) for k in np.flatnonzero((starts[firsts] >= begin) & (starts[firsts] < end))]
        kept = np.asarray(order[:MAX_PHRASES], dtype=np.int64)
        first, last = firsts[kept], lasts[kept]
        edges[:, : len(kept)] = [tokens[starts[last]], tokens[stops[last] - 1], tokens[starts[first]], tokens[stops[first] - 1]]
        return links, edges

    def _near_words(
        self, tokens: np.ndarray, starts: list[int], keys: list[int], message_of: np.ndarray, last_start: int, last_stop: int,
    ) -> tuple[np.ndarray, np.ndarray]:
        """At the first token of each word of ``tokens`` (``starts`` and ``keys``:
        ``_hashed_words``; ``message_of``: ``_message_starts``), per offset of ``NEAR_OFFSETS``:
        the row of ``P_near`` for the word that many words away in its message (-1 where none,
        and at every other token); and, where that neighbour is a word the last message
        (``[last_start, last_stop)``) holds other than the neighbour itself, 1 over how many
        times it holds it so (0 where it does not)."""
        near = np.full((len(tokens), len(NEAR_OFFSETS)), -1, dtype=np.int64)
        asked = np.zeros((len(tokens), len(NEAR_OFFSETS)), dtype=self.dtype)
        if not starts:
            return near, asked
        at = np.asarray(starts, dtype=np.int64)
        rows = _hash_rows(np.asarray(keys, dtype=np.int64), self.shape.word_rows)
        message = message_of[at]
        in_last = (at >= last_start) & (at < last_stop)
        held = Counter(rows[in_last].tolist())  # how often the last message holds each word
        held_of = np.asarray([held[r] for r in rows.tolist()], dtype=np.int64)  # the same, per word of the prompt
        for column, offset in enumerate(NEAR_OFFSETS):
            other = np.arange(len(at)) + offset
            valid = (other >= 0) & (other < len(at))
            valid[valid] &= message[other[valid]] == message[valid]
            words, other = at[valid], other[valid]
            near[words, column] = column * self.shape.word_rows + rows[other]
            elsewhere = held_of[other] - in_last[other]
            asked[words, column] = np.where(elsewhere > 0, 1.0 / np.maximum(elsewhere, 1), 0.0)
        return near, asked

    def _shared_affixes(self, tokens: np.ndarray, spans: list[tuple[int, int]], message_of: np.ndarray) -> np.ndarray:
        """(len(tokens), 4): at the first token of a word, 1 where another, different word of
        its message ends with the same last ``AFFIX_SHORT`` characters, the same last
        ``AFFIX_LONG``, and begins with the same first ``AFFIX_SHORT``, first ``AFFIX_LONG``; 0
        elsewhere. Words that rhyme, or share a stem or a prefix, then find each other by one
        weight each, whatever the words are. (``spans``: the words, ``_word_spans``;
        ``message_of``: ``_message_starts``.)"""
        out = np.zeros((len(tokens), 4), dtype=self.dtype)
        messages = message_of.tolist()
        listed = tokens.tolist()
        words = [(start, messages[start], tuple(listed[start:stop])) for start, stop in spans]
        distinct = {(message, word) for _, message, word in words}
        affixes = ((AFFIX_SHORT, True), (AFFIX_LONG, True), (AFFIX_SHORT, False), (AFFIX_LONG, False))
        for column, (length, from_end) in enumerate(affixes):
            # how many distinct words of each message have each affix
            holders = Counter((message, word[-length:] if from_end else word[:length]) for message, word in distinct if len(word) >= length)
            for start, message, word in words:
                if len(word) >= length:
                    out[start, column] = holders[(message, word[-length:] if from_end else word[:length])] > 1
        return out

    def _word_spans(self, tokens: np.ndarray) -> list[tuple[int, int]]:
        """The (start, stop) of each word of ``tokens`` (a maximal run of letters and digits)."""
        return word_spans(tokens, self._is_word_char)

    def _order_in_word(self, tokens: np.ndarray, spans: list[tuple[int, int]]) -> np.ndarray:
        """(len(tokens), 2, V) bool: for each token in a word (``spans``: the words), the
        word's characters that come before it in code order, and those that come after it."""
        v = self.shape.vocab_size
        out = np.zeros((len(tokens), 2, v), dtype=bool)
        if not spans:
            return out
        starts, stops = np.asarray(spans).T
        lengths = stops - starts
        inside = np.repeat(starts, lengths) + np.arange(lengths.sum()) - np.repeat(np.cumsum(lengths) - lengths, lengths)
        word_of = np.repeat(np.arange(len(spans)), lengths)
        letters = np.zeros((len(spans), v), dtype=bool)  # which characters each word holds
        letters[word_of, tokens[inside]] = True
        codes = np.arange(v)
        held = letters[word_of]
        out[inside, 0] = held & (codes < tokens[inside][:, None])
        out[inside, 1] = held & (codes > tokens[inside][:, None])
        return out

    def _bag_rows(self, content: np.ndarray, words: list[int]) -> np.ndarray:
        """The bag's rows for the last message: its characters with their counts, and its
        hashed words (``words``, in order)."""
        s, o = self.shape, self._offsets
        counts = np.bincount(content, minlength=s.vocab_size)
        chars = np.flatnonzero(counts)
        char_rows = o["chars"] + chars * s.max_count + np.minimum(counts[chars], s.max_count) - 1
        word_rows = o["words"] + _hash_rows(np.asarray(words[: s.bag_words], dtype=np.int64), s.word_rows)
        bag = np.full(s.bag_chars + s.bag_words, self.absent_row, dtype=np.int64)
        bag[: min(len(char_rows), s.bag_chars)] = char_rows[: s.bag_chars]
        bag[s.bag_chars : s.bag_chars + len(word_rows)] = word_rows
        return bag

    def features(self, prompts: Sequence[Sequence[int]], generated: Sequence[Sequence[int]]) -> Features:
        """Inputs for predicting the next token after ``prompts[i] + generated[i]`` for each i."""
        s, v = self.shape, self.shape.vocab_size
        index: dict[tuple[int, ...], int] = {}
        views: list[PromptView] = []
        n = len(prompts)
        prompt_of = np.empty(n, dtype=np.int64)
        gen = np.full((n, s.gen_slots), PAD, dtype=np.int64)
        step = np.zeros(n, dtype=np.int64)
        prev = np.full((n, PREVIOUS_TOKENS), -1, dtype=np.int64)
        emitted = np.zeros((n, v), dtype=bool)
        commas = np.zeros(n, dtype=np.int64)
        typed = np.zeros(n, dtype=np.int64)
        begun = np.zeros(n, dtype=np.int64)
        replies = [np.asarray(done, dtype=np.int64) for done in generated]
        padded = np.full((n, max((len(done) for done in replies), default=0)), PAD, dtype=np.int64)  # PAD past a reply's end
        for i, (prompt, done) in enumerate(zip(prompts, replies)):
            key = tuple(prompt)
            if key not in index:
                index[key] = len(views)
                views.append(self.prompt_view(prompt))
            prompt_of[i] = index[key]
            padded[i, : len(done)] = done
            head = done[: s.gen_slots]
            gen[i, : len(head)] = head
            step[i] = len(done)
            if len(done):
                prev[i, -min(len(done), PREVIOUS_TOKENS) :] = done[-PREVIOUS_TOKENS:]
                emitted[i, done] = True
                commas[i] = np.count_nonzero(done == self._comma)
                typed[i] = _trailing(self._is_word_char[done][None, :])[0]
                begun[i] = self._prefix_hash(done[None, :], typed[i : i + 1])[0]
        return self._assemble(
            self.prompt_features(views), prompt_of, gen, step, prev, emitted, (commas, typed, begun), self._last_reply_word(replies), self._written_words(padded)
        )

    def features_for_rows(
        self, prompts: PromptFeatures, prompt_of: np.ndarray, generated: np.ndarray, images: np.ndarray | None = None
    ) -> Features:
        """Inputs for rows that each follow one of ``prompts`` (``prompt_of``) and have generated
        ``generated[i]`` (all of the same length): the rows of a sampling step. ``prompts`` is
        ``prompt_features()`` and ``images`` is ``_images()``, for a caller that assembles many
        steps of the same prompts with the same parameters."""
        s = self.shape
        n, t = generated.shape
        gen = np.full((n, s.gen_slots), PAD, dtype=np.int64)
        gen[:, : min(t, s.gen_slots)] = generated[:, : s.gen_slots]
        prev = np.full((n, PREVIOUS_TOKENS), -1, dtype=np.int64)
        if t:
            prev[:, -min(t, PREVIOUS_TOKENS) :] = generated[:, -PREVIOUS_TOKENS:]
        emitted = np.zeros((n, s.vocab_size), dtype=bool)
        np.put_along_axis(emitted, generated.astype(np.int64), True, axis=1)
        commas = np.count_nonzero(generated == self._comma, axis=1)
        replies = generated.astype(np.int64)
        typed = _trailing(self._is_word_char[replies])
        begun = self._prefix_hash(replies, typed)
        last_word = self._last_reply_word(replies)
        written = self._written_words(replies)
        return self._assemble(prompts, prompt_of, gen, np.full(n, t, dtype=np.int64), prev, emitted, (commas, typed, begun), last_word, written, images)

    def _written_words(self, replies: np.ndarray) -> np.ndarray:
        """(N, WRITTEN_WORDS) for each reply so far (``replies`` (N, T), PAD after a shorter
        one's end): the hashed rows (as the pointer's word keys hash them) of its first words
        that something other than a letter or digit has ended, -2 past them: the words the turn
        has written whole. Hashed a column at a time for every reply at once, as unsigned 64-bit
        integers: they wrap modulo 2**64, a multiple of the hash's 2**61, so the keys agree."""
        n = len(replies)
        out = np.full((n, WRITTEN_WORDS), -2, dtype=np.int64)
        key = np.zeros(n, dtype=np.uint64)
        found = np.zeros(n, dtype=np.int64)
        rows = np.arange(n)
        for column in replies.T:
            in_word = self._is_word_char[column]
            ended = ~in_word & (key != 0) & (column != PAD) & (found < WRITTEN_WORDS)
            out[rows[ended], found[ended]] = _hash_rows(key[ended], self.shape.word_rows)
            found += ended
            key = np.where(in_word, (key * np.uint64(WORD_HASH_BASE) + column.astype(np.uint64)) & np.uint64(WORD_HASH_MASK), np.uint64(0))
        return out

    def _last_reply_word(self, replies: Sequence[np.ndarray]) -> np.ndarray:
        """(N, 3) for each reply so far: the first and last tokens of its last word (-1 where it
        ends in neither a word nor a word and links), and 1 where links follow that word."""
        out = np.full((len(replies), 3), -1, dtype=np.int64)
        for row, reply in enumerate(replies):
            end = len(reply)
            while end and self._is_link_char[reply[end - 1]]:
                end -= 1
            if not end or not self._is_word_char[reply[end - 1]]:
                continue
            start = end - 1
            while start and self._is_word_char[reply[start - 1]]:
                start -= 1
            out[row] = reply[start], reply[end - 1], end < len(reply)
        return out

    def prompt_features(self, views: Sequence[PromptView]) -> PromptFeatures:
        """What the rows following ``views`` share: their inputs stacked once per prompt."""
        s, o = self.shape, self._offsets
        v = s.vocab_size
        window = _stack([view.window for view in views], s.window)
        message = _stack([view.message for view in views], s.message_slots)
        opening = _stack([view.opening for view in views], s.message_slots)
        earlier = _stack([view.earlier for view in views], s.message_slots)
        bag = _stack([view.bag for view in views], s.bag_chars + s.bag_words)
        prompt_rows = np.concatenate(
            [
                window + o["window"] + np.arange(s.window) * v,
                message + o["message"] + np.arange(s.message_slots) * v,
                opening + o["opening"] + np.arange(s.message_slots) * v,
                earlier + o["earlier"] + np.arange(s.message_slots) * v,
                bag,
            ],
            axis=1,
        )
        characters = np.concatenate([window, message, opening, earlier], axis=1)
        rises = _stack([view.rises for view in views], s.neighbour_pairs).astype(self.dtype, copy=False)
        comparisons = _stack([view.comparisons for view in views], COMPARISONS).astype(self.dtype)
        signs = np.sign(_stack([view.numbers for view in views], NUMBER_SLOTS)).astype(self.dtype)
        shared = _stack([view.shared for view in views], s.shared_words).astype(self.dtype, copy=False)
        prompt_dense = np.concatenate([self._digit_value[characters], rises, comparisons, signs, shared], axis=1)
        # The pointer's slots hold the prompt's characters (its role and end tokens are not
        # answers to copy) and, last, the end token: attending past the prompt ends the turn.
        characters = np.where(characters >= self.tokenizer.first_char_id, characters, PAD)
        slots = np.concatenate([characters, np.full((len(views), 1), END, dtype=np.int64)], axis=1)
        return PromptFeatures(
            first_token=window[:, 0],
            message_length=np.asarray([view.message_length for view in views], dtype=np.int64),
            prompt_rows=prompt_rows,
            prompt_dense=prompt_dense,
            repeats=_stack([view.repeats for view in views], s.window_pairs).astype(self.dtype, copy=False),
            slots=slots,
            neighbours=_stack([view.neighbours for view in views], s.pointer_slots, len(NEIGHBOUR_OFFSETS)),
            links=_stack([view.links for view in views], s.pointer_slots, LINKS),
            phrase_edges=_stack([view.phrase_edges for view in views], 4, MAX_PHRASES),
            counts=_stack([view.counts for view in views], s.pointer_slots),
            word_counts=_stack([view.word_counts for view in views], s.pointer_slots),
            ordered=np.stack([view.ordered for view in views]) if views else None,
            ranked=_stack([view.ranked for view in views], s.pointer_slots, RANKS),
            marked=_stack([view.marked for view in views], s.pointer_slots, MARKS),
            word_keys=_stack([view.word_keys for view in views], s.pointer_slots),
            place_keys=_stack([view.place_keys for view in views], s.pointer_slots),
            word_offsets=_stack([view.word_offsets for view in views], s.pointer_slots),
            word_prefixes=_stack([view.word_prefixes for view in views], s.pointer_slots),
            near_keys=_stack([view.near_keys for view in views], s.pointer_slots, len(NEAR_OFFSETS)),
            numbers=np.stack([view.numbers for view in views]) if views else np.zeros((0, NUMBER_SLOTS)),
            number_context=_stack([view.number_context for view in views], NUMBER_SLOTS, 4),
            number_diffs=_stack([view.number_diffs for view in views], MAX_NUMBERS - 1).astype(np.float64, copy=False),
            lone_number=np.asarray([view.lone_number for view in views], dtype=np.float64),
            tally=_stack([view.tally for view in views], s.tally_width).astype(np.float64, copy=False),
        )

    def _assemble(
        self,
        prompts: PromptFeatures,
        prompt_of: np.ndarray,
        gen: np.ndarray,
        step: np.ndarray,
        prev: np.ndarray,
        emitted: np.ndarray,
        items: tuple[np.ndarray, np.ndarray, np.ndarray],
        last_word: np.ndarray,
        written: np.ndarray,
        images: np.ndarray | None = None,
    ) -> Features:
        """Features of rows that each follow one of ``prompts`` (``prompt_of``), from each row's
        turn so far (``prev`` (N, PREVIOUS_TOKENS): the last tokens emitted, the latest last, -1
        before the first; at the first step the prompt's last token is the previous one;
        ``items``: how many commas the turn holds, so how many items of a list it has written,
        how many letters and digits it ends with, so how far into a word it is, and their hash
        (``_prefix_hash``), so which words it may be writing;
        ``last_word``: ``_last_reply_word``; ``written``: ``_written_words``)."""
        s, o = self.shape, self._offsets
        commas, typed, begun = items
        around = prompts.neighbours[prompt_of]
        # matched whatever the case: a letter the case switch turned still continues its word
        images_of = self._folded[self._images() if images is None else images]
        images = images_of[around]
        valid = around != PAD
        previous = np.where(prev[:, -1] >= 0, prev[:, -1], prompts.first_token[prompt_of])
        prev = np.where(prev >= 0, self._folded[prev], -1)
        last = prev[:, -1]
        follows = (images == last[:, None, None]) & (last >= 0)[:, None, None] & valid
        runs: list[list[np.ndarray]] = [[], []]  # the pairs' scores, then the triples'
        for sign in (1, -1):  # forwards, then backwards
            matched = follows[:, :, NEIGHBOUR_OFFSETS.index(sign)]
            for back in (2, 3):
                k = NEIGHBOUR_OFFSETS.index(sign * back)
                token = prev[:, -back]
                matched = matched & (images[:, :, k] == token[:, None]) & (token >= 0)[:, None] & valid[:, :, k]
                runs[back - 2].append(matched)
        follows = np.concatenate([follows, np.stack(runs[0] + runs[1], axis=2), self._walks(prompts, prompt_of, images_of, last, last_word)], axis=2)
        capped = np.minimum(step, s.max_steps - 1)
        remaining = np.clip(prompts.message_length[prompt_of] - step + 8, 0, s.length_range - 1)
        position_rows = np.concatenate(
            [
                gen + o["generated"] + np.arange(s.gen_slots) * s.vocab_size,
                (capped + o["step"])[:, None],
                (previous + o["previous"])[:, None],
                (remaining + o["length"])[:, None],
            ],
            axis=1,
        )
        slots = prompts.slots[prompt_of]
        counts = prompts.counts[prompt_of]
        used = np.take_along_axis(emitted, slots, axis=1).astype(self.dtype)
        used[:, -1] = 0.0
        # a word's keys score the slot the turn has reached in it: its first character before
        # the turn writes a letter or digit, its second after one, so the word the pointer
        # chose goes on being chosen where its first letters are another word's too
        offsets = prompts.word_offsets[prompt_of]
        word_keys = prompts.word_keys[prompt_of]
        starts = np.where(offsets == 0, word_keys, -1)
        word_used = ((starts[:, :, None] == written[:, None, :]).any(axis=2) & (starts >= 0)).astype(self.dtype)
        reached = (offsets == typed[:, None]) & (prompts.word_prefixes[prompt_of] == begun[:, None])
        word_keys = np.where(reached, word_keys, -1)
        return Features(
            prompt_of=prompt_of,
            prompt_rows=prompts.prompt_rows,
            prompt_dense=prompts.prompt_dense,
            repeats=prompts.repeats,
            position_rows=position_rows,
            position_dense=self._digit_value[gen],
            step=capped,
            slots=slots,
            used=used,
            word_used=word_used,
            follows=follows.astype(self.dtype),
            counts=counts,
            word_counts=prompts.word_counts[prompt_of],
            order=np.concatenate(
                [self._order(prompts.ordered, prompt_of, emitted, counts > 0, used), self._next_items(prompts.ranked, prompt_of, commas, typed, reached)], axis=2
            ),
            marked=prompts.marked[prompt_of],
            word_keys=word_keys,
            place_keys=np.where(reached, prompts.place_keys[prompt_of], -1),
            near_keys=prompts.near_keys,
            numbers=prompts.numbers,
            number_context=prompts.number_context,
            number_diffs=prompts.number_diffs,
            lone_number=prompts.lone_number,
            tally=prompts.tally,
            number_groups=self._number_groups(gen, step),
        )

    def _walks(self, prompts: PromptFeatures, prompt_of: np.ndarray, images_of: np.ndarray, last: np.ndarray, last_word: np.ndarray) -> np.ndarray:
        """(N, pointer_slots, LINK_FEATURES): the scores that walk a phrase word by word
        (``LINK_FEATURES``), matched whatever the case; ``images_of`` is each token's image
        under the copy map, folded, and ``last`` the token just written, folded (-1: none)."""
        s = self.shape
        links, edges = prompts.links[prompt_of], prompts.phrase_edges[prompt_of]  # (N, S, LINKS), (N, 4, MAX_PHRASES)
        links = np.where(links != PAD, images_of[links], -2)  # -2 matches nothing written
        edges = np.where(edges != PAD, images_of[edges], -2)
        known = last_word[:, 0] >= 0
        first = np.where(known, self._folded[last_word[:, 0]], -1)
        final = np.where(known, self._folded[last_word[:, 1]], -1)
        linked = known & (last_word[:, 2] == 1)
        written = (last >= 0)[:, None]
        out = np.zeros((len(last), s.pointer_slots, LINK_FEATURES), dtype=bool)
        for column, (a, b) in enumerate(((0, 1), (2, 3))):  # the word before, then the word after
            out[:, :, column] = (links[:, :, a] == last[:, None]) & written
            out[:, :, 2 + column] = (links[:, :, a] == first[:, None]) & (links[:, :, b] == final[:, None]) & linked[:, None]
            # the end slot: after a phrase's last word, then before its first
            out[:, -1, column] = ((edges[:, 2 * column] == last[:, None]) & written).any(axis=1)
            matched = (edges[:, 2 * column] == first[:, None]) & (edges[:, 2 * column + 1] == final[:, None])
            out[:, -1, 2 + column] = matched.any(axis=1) & known & ~linked
        return out

    def _number_groups(self, gen: np.ndarray, step: np.ndarray) -> list[NumberGroup]:
        """The rows whose reply so far (all of it among the generated slots) is the start of an
        integer's text, grouped by that reply."""
        rows_of: dict[tuple[int, ...], list[int]] = {}
        for row in np.flatnonzero(step <= self.shape.gen_slots):
            rows_of.setdefault(tuple(gen[row, : step[row]].tolist()), []).append(int(row))
        groups = []
        for reply, rows in rows_of.items():
            spelling = self._spelling.continuations(reply)
            if spelling is not None:
                groups.append(NumberGroup(np.asarray(rows, dtype=np.int64), spelling))
        return groups

    def _order(
        self, ordered: np.ndarray | None, prompt_of: np.ndarray, emitted: np.ndarray, in_word: np.ndarray, used: np.ndarray
    ) -> np.ndarray:
        """(N, pointer_slots, 2): 1 where the slot's character, not yet written, comes first
        (second column: last) in code order among the characters of its word not yet written."""
        s = self.shape
        if ordered is None:
            return np.zeros((0, s.pointer_slots, 2), dtype=self.dtype)
        ordered = ordered[prompt_of]  # (N, S, 2, words)
        unwritten = ~_token_bits(emitted)[:, None, None, :]
        missing = np.zeros(ordered.shape[:3], dtype=np.uint64)
        for word in range(ordered.shape[3]):  # a few words: numpy's reduction over so short an axis is slow
            missing |= ordered[..., word] & unwritten[..., word]
        passed = missing == 0  # every character on that side already written
        return (passed & (in_word & (used == 0))[:, :, None]).astype(self.dtype)

    def _next_items(self, ranked: np.ndarray, prompt_of: np.ndarray, commas: np.ndarray, typed: np.ndarray, reached: np.ndarray) -> np.ndarray:
        """(N, pointer_slots, RANKS): 1 at the character of the list item whose place in order,
        from the first (second column: from the last), is the number of items the turn has
        written, taken as the commas it holds, that comes after as many characters of the item
        as the turn's last word has (``typed``: its first character while the turn writes none),
        where the turn's last word is the item's first characters (``reached``, (N,
        pointer_slots));
        the same in order of length, and for the words said with numbers, ranked by those
        numbers (``_bound_ranks``): so a list written sorted, either way, or the name with the
        smallest number, is one weight and not a key per item. After the last item the end
        slot takes the mark: where the turn holds as many commas as the ranking's last place
        and its last word is as long as the item there, so a list written in order ends after
        its last item by the same weight, whatever the list's length."""
        place = commas * MAX_ITEM_CHARS + np.minimum(typed, MAX_ITEM_CHARS)
        out = ((ranked[prompt_of] == place[:, None, None]) & reached[:, :, None]).astype(self.dtype)
        final = ranked.max(axis=1)[prompt_of]  # (N, RANKS): the last place's item, at its last character
        out[:, -1] = (final == (place - 1)[:, None]) & (final >= 0) & (typed > 0)[:, None]
        return out

    # -- forward / backward ---------------------------------------------------------------------

    def forward(
        self, feats: Features, temperature: float = 1.0, allowed: np.ndarray | None = None, copy_map: np.ndarray | None = None
    ) -> ForwardCache:
        """Next-token probabilities at ``temperature`` (> 0) for every position in ``feats``;
        ``allowed`` (N, V), when given, masks each position's tokens further (constrained decoding).
        ``copy_map`` is ``_copy_map()``, for a caller that runs many steps with the same parameters."""
        p = self.params
        split = feats.prompt_dense.shape[1]
        per_prompt = p["W_in"][feats.prompt_rows].sum(axis=1) + feats.prompt_dense @ p["U"][:split]
        per_prompt += feats.repeats @ p["U_same"]
        per_prompt += self._level_inputs(feats)
        summed = per_prompt[feats.prompt_of] + p["W_in"][feats.position_rows].sum(axis=1) + feats.position_dense @ p["U"][split:]
        spread = np.sqrt(summed.var(axis=1, keepdims=True) + HIDDEN_NORM_FLOOR)
        normed = (summed - summed.mean(axis=1, keepdims=True)) / spread
        pre = normed + p["b1"]
        hidden = np.maximum(pre, 0.0)
        attention = self._attention(feats, hidden)
        attended = self._per_token(attention, feats.slots)
        copy_map = self._copy_map() if copy_map is None else copy_map
        copied = attended @ copy_map
        switch = self._case_switch(feats, hidden)
        switched = copied + switch[:, None] * (copied[:, self._other_case] - copied)
        gate = np.log(COPY_FLOOR + switched)
        pointer_gain = GAINS["P_gain"] * p["P_gain"][feats.step]
        logits = hidden @ p["W2"] + GAINS["b2"] * p["b2"] + GAINS["B_step"] * p["B_step"][feats.step]
        logits += pointer_gain[:, None] * gate
        by_count = self._per_count(attention, feats.counts)
        logits += by_count @ (GAINS["C"] * p["C"])
        by_word_count = self._per_count(attention, feats.word_counts)
        logits += by_word_count @ (GAINS["C_word"] * p["C_word"])
        spans, held = _spans(feats.numbers)
        logits += GAINS["L_span"] * (p["L_span"][spans] * held[..., None]).sum(axis=1)[feats.prompt_of]
        logits = logits / temperature
        logits[:, ~self.allowed] = -np.inf
        if allowed is not None:
            logits[~allowed] = -np.inf
        logits -= logits.max(axis=1, keepdims=True)
        # Log-softmax, not log(softmax): a token far below the others (tens of nats) has a
        # float32 probability of 0 but a finite logprob, which the trainer's importance ratio
        # and a sample's reported logprob both need.
        text_log_probs = logits - np.log(np.exp(logits).sum(axis=1, keepdims=True))
        number_shares = number_log_shares(feats.number_groups, self._number_value(feats), self._number_log_spread())
        mix_logit = GAINS["N_mix"] * self.params["N_mix"][feats.step]
        mixture = mix_in_numbers(text_log_probs, feats.number_groups, number_shares, mix_logit, temperature)
        text_probs = np.exp(text_log_probs)
        probs = np.exp(mixture.log_probs) if feats.number_groups else text_probs
        return ForwardCache(
            feats, normed, spread, pre, hidden, attention, by_count, by_word_count, attended, copy_map, copied, switch, switched, gate, pointer_gain, text_probs,
            number_shares, mixture.share, mixture.number_probs, probs, mixture.log_probs, temperature,
        )

    def _level_inputs(self, feats: Features) -> np.ndarray:
        """(P, hidden): each prompt's sum of ``U_level``'s rows for the levels its numbers reach."""
        weights = self.params["U_level"]
        reached = _levels_reached(feats.numbers)
        out = np.zeros((len(reached), weights.shape[2]), dtype=weights.dtype)
        for slot in np.flatnonzero(reached.max(axis=0, initial=0)):  # only the slots and levels reached
            top = reached[:, slot].max()
            table = np.zeros((top + 1, weights.shape[2]), dtype=weights.dtype)
            np.cumsum(weights[slot, :top], axis=0, out=table[1:])  # table[i]: the rows below level i summed
            out += table[reached[:, slot]]
        return out

    def _level_grads(self, feats: Features, dprompt: np.ndarray) -> np.ndarray:
        """``U_level``'s gradient: a level's row gets the gradients of the prompts whose number reaches it."""
        levels = len(NUMBER_LEVELS) + 1
        reached = _levels_reached(feats.numbers) + np.arange(NUMBER_SLOTS) * levels
        per_level = _rows_sum(reached.ravel(), np.repeat(dprompt, NUMBER_SLOTS, axis=0), (NUMBER_SLOTS * levels, dprompt.shape[1]))
        per_level = per_level.reshape(NUMBER_SLOTS, levels, -1)
        return np.cumsum(per_level[:, ::-1], axis=1)[:, ::-1][:, 1:]  # the prompts reaching level j or above

    def _case_switch(self, feats: Features, hidden: np.ndarray) -> np.ndarray:
        """(N,): the share of each copied letter's mass sent to its other case at each position."""
        p = self.params
        logit = GAINS["P_case"] * p["P_case"][feats.step] + hidden @ (GAINS["Q_case"] * p["Q_case"])
        return 1.0 / (1.0 + np.exp(-logit))

    def _number_log_spread(self) -> float:
        return float(GAINS["N_spread"] * self.params["N_spread"][0])

    def _number_value(self, feats: Features) -> np.ndarray:
        """(N,): the value of each position's prompt (``_prompt_values``)."""
        return self._prompt_values(feats)[feats.prompt_of]

    def _prompt_values(self, feats: Features) -> np.ndarray:
        """(P,): the value each prompt gives its numbers: a bias plus each number times a weight
        for its place, the token before it, the token after it and the word right after it
        (``_words_after_numbers``), plus the last message's differences of neighbouring numbers,
        its lone number and its count of each character and word less its mean count
        (``observe``), each times a weight."""
        p = self.params
        place, before, after, word = (feats.number_context[..., i] for i in range(4))
        weight = GAINS["N_place"] * p["N_place"][place] + GAINS["N_before"] * p["N_before"][before]
        weight = weight + GAINS["N_after"] * p["N_after"][after] + GAINS["N_word"] * p["N_word"][word]
        per_prompt = BIAS_INPUT * GAINS["N_bias"] * p["N_bias"][0] + (feats.numbers * weight).sum(axis=1)
        per_prompt = per_prompt + feats.number_diffs @ (GAINS["N_diff"] * p["N_diff"])
        per_prompt = per_prompt + feats.lone_number * (GAINS["N_lone"] * p["N_lone"][0])
        return per_prompt + self._centred_tally(feats) @ (GAINS["N_tally"] * np.concatenate([p[k] for k in TALLY_PARTS]))

    def _centred_tally(self, feats: Features) -> np.ndarray:
        """(P, tally_width): each prompt's count of each character, word and class, less the
        mean over the prompts trained on."""
        return feats.tally - self.params["N_tally_mean"]

    def _tally_parts(self, per_column: np.ndarray) -> dict[str, np.ndarray]:
        """Something per column of the tally, split between the parameters that weigh them
        (``TALLY_PARTS``: the characters', the words', the classes')."""
        s = self.shape
        return dict(zip(TALLY_PARTS, np.split(per_column, [s.vocab_size, s.vocab_size + s.word_rows])))

    def observe(self, feats: Features) -> None:
        """Fold a training batch's prompts (each distinct prompt once) into the mean tally the
        number path centres its counts on; the learner calls this before each batch's steps."""
        seen = self.params["N_tally_seen"]
        if len(feats.tally):
            seen += len(feats.tally)
            self.params["N_tally_mean"] += (feats.tally.sum(axis=0) - len(feats.tally) * self.params["N_tally_mean"]) / seen

    def step_scales(self, feats: Features) -> dict[str, np.ndarray]:
        """The share of Adam's step each value weight of the number path takes on this batch
        (``numbers.step_scales``), the repeats' weights' (``REPEAT_STEP`` where the pair tells
        the batch's prompts apart) and the input table's rows' (``COMMON_ROWS_STEP`` shared by the
        rows every prompt holds); every other parameter takes all of it."""
        v = self.shape.vocab_size
        width = self.shape.tally_width
        spread = float(np.exp(self._number_log_spread()))
        x = feats.numbers.ravel()
        place, before, after, word = (feats.number_context[..., i].ravel() for i in range(4))
        diffs = feats.number_diffs
        one_weight = np.zeros(len(diffs), dtype=np.int64)  # per prompt: the index of a one-element weight
        varies = feats.repeats.max(axis=0, initial=0.0) > feats.repeats.min(axis=0, initial=1.0)
        tally = step_scales(self._centred_tally(feats).ravel(), np.tile(np.arange(width), len(feats.tally)), width, spread)
        top_levels = _levels_reached(feats.numbers).max(axis=0, initial=0)  # per number slot, over the batch
        return {
            "W_in": self._input_step_scales(feats.prompt_rows),
            "U_same": np.where(varies, REPEAT_STEP, 1.0)[:, None],
            "U_level": np.minimum(1.0, LEVELS_STEP / np.maximum(top_levels, 1))[:, None, None],
            "N_bias": step_scales(np.full(len(diffs), BIAS_INPUT), one_weight, 1, spread),
            "N_place": step_scales(x, place, NUMBER_SLOTS, spread),
            "N_before": step_scales(x, before, v, spread),
            "N_after": step_scales(x, after, v, spread),
            "N_word": step_scales(x, word, self.shape.word_rows + 1, spread),
            "N_lone": step_scales(feats.lone_number, one_weight, 1, spread),
            "N_diff": step_scales(diffs.ravel(), np.tile(np.arange(diffs.shape[1]), len(diffs)), diffs.shape[1], spread),
            **self._tally_parts(tally),
        }

    def _input_step_scales(self, prompt_rows: np.ndarray) -> np.ndarray:
        """(input rows, 1): each row's share of Adam's step, ``COMMON_ROWS_STEP`` split among
        the rows that every one of the batch's prompts holds, all of it for the others."""
        scales = np.ones((self.params["W_in"].shape[0], 1), dtype=self.dtype)
        prompts = len(prompt_rows)
        held = np.unique(prompt_rows + np.arange(prompts)[:, None] * len(scales))  # (prompt, row), each once
        in_every = np.flatnonzero(np.bincount(held % len(scales), minlength=len(scales)) == prompts)
        in_every = in_every[in_every != self.absent_row]
        if len(in_every) > COMMON_ROWS_STEP:
            scales[in_every] = COMMON_ROWS_STEP / len(in_every)
        return scales

    def _images(self) -> np.ndarray:
        """(V,): the token each token's attention now favours emitting: itself, unless the copy
        map has learned to prefer another (the largest entry of its row). The neighbour scores
        match the previous token against the images of the slots' neighbours (letters whatever
        their case), so a span copied through the map (each character transformed) is followed
        like a plain copy."""
        return self._map_logits().argmax(axis=1)

    def _map_logits(self) -> np.ndarray:
        """(V, V): row a's logits over the tokens an attended a is copied as: the identity's lead,
        M, and the map R by code distance and by case."""
        p = self.params
        by_relation = np.where(self._offset_valid, p["R"][self._offset_index], 0.0)
        letters, partners, entries = self._case_pairs
        by_relation[letters, partners] += p["R"][entries]
        identity = IDENTITY_LOGIT * np.eye(self.shape.vocab_size, dtype=self.dtype)
        return identity + GAINS["M"] * p["M"] + GAINS["R"] * by_relation

    def _copy_map(self, logits: np.ndarray | None = None) -> np.ndarray:
        logits = self._map_logits() if logits is None else logits.copy()
        logits -= logits.max(axis=1, keepdims=True)
        weights = np.exp(logits)
        return weights / weights.sum(axis=1, keepdims=True)

    def _attention(self, feats: Features, hidden: np.ndarray) -> np.ndarray:
        """Pointer weights over the slots: position (per step, and as the hidden layer asks) +
        token key (fixed, and as the hidden layer asks) + coverage + neighbourhood; empty slots
        get none. The end slot (last) is scored only by a bias and by neighbourhood, with weights
        of its own (``P_end``): whether a copy that reached the last message's end ends the
        answer too is each task's to learn. It has no query (a query on it let runs settle on
        ending early) and no score per step: one let a task whose answers mostly end at step 5
        end its longer ones there too, with no sample left to show otherwise."""
        p = self.params
        scores = GAINS["P_used"] * p["P_used"][0] * feats.used + GAINS["P_word_used"] * p["P_word_used"][0] * feats.word_used
        scores += feats.order @ (GAINS["P_order"] * p["P_order"])
        scores += feats.marked @ (GAINS["P_mark"] * p["P_mark"])
        scores[:, :-1] += GAINS["P_pos"] * p["P_pos"][feats.step]
        scores[:, :-1] += feats.follows[:, :-1] @ (GAINS["P_rel"] * p["P_rel"])
        scores[:, -1] += self._end_inputs(feats) @ (GAINS["P_end"] * p["P_end"])
        scores[:, :-1] += hidden @ (GAINS["Q_pos"] * p["Q_pos"])
        wanted = GAINS["P_key"] * p["P_key"] + hidden @ (GAINS["Q_key"] * p["Q_key"])  # (N, V)
        scores[:, :-1] += np.take_along_axis(wanted, feats.slots[:, :-1], axis=1)
        for field, fixed, query in WORD_KEYS:
            keys = getattr(feats, field)
            keyed = np.nonzero(keys >= 0)  # (row, slot) pairs where a slot starts a word
            rows = keys[keyed]
            asked = (hidden[keyed[0]] * (GAINS[query] * p[query][rows])).sum(axis=1)
            scores[keyed] += asked + GAINS[fixed] * p[fixed][rows]
        scores[:, :-1] += self._near_scores(feats.near_keys)[feats.prompt_of]
        scores[:, :-1][feats.slots[:, :-1] == PAD] = -np.inf
        scores -= scores.max(axis=1, keepdims=True)
        weights = np.exp(scores)
        return weights / weights.sum(axis=1, keepdims=True)

    def _near_scores(self, near_keys: np.ndarray) -> np.ndarray:
        """(P, character slots): each slot's ``P_near`` weights for its word's neighbours, summed."""
        weights = GAINS["P_near"] * self.params["P_near"]
        return np.where(near_keys >= 0, weights[np.maximum(near_keys, 0)], 0.0).sum(axis=2)[:, :-1]

    @staticmethod
    def _end_inputs(feats: Features) -> np.ndarray:
        """(N, offsets + pairs + 1): the end slot's neighbour scores and a constant for its bias."""
        follows = feats.follows[:, -1]
        return np.concatenate([follows, np.ones((len(follows), 1), dtype=follows.dtype)], axis=1)

    def _per_count(self, weights: np.ndarray, counts: np.ndarray) -> np.ndarray:
        """(N, max_count): attention summed per in-word count of the attended characters."""
        n, k = counts.shape[0], self.shape.max_count
        flat = (counts + np.arange(n)[:, None] * k).ravel()
        return np.bincount(flat, weights=weights.ravel(), minlength=n * k).reshape(n, k).astype(weights.dtype, copy=False)

    def _per_token(self, weights: np.ndarray, tokens: np.ndarray) -> np.ndarray:
        """(N, V): each row's ``weights`` summed per token of ``tokens`` (both (N, K))."""
        n, v = tokens.shape[0], self.shape.vocab_size
        flat = (tokens + np.arange(n)[:, None] * v).ravel()
        return np.bincount(flat, weights=weights.ravel(), minlength=n * v).reshape(n, v).astype(weights.dtype, copy=False)

    def token_logprobs(
        self, feats: Features, targets: np.ndarray, temperature: float = 1.0, allowed: np.ndarray | None = None
    ) -> tuple[np.ndarray, ForwardCache]:
        """log p(targets[i]) at each position, and the cache for ``backward``."""
        cache = self.forward(feats, temperature, allowed)
        return cache.log_probs[np.arange(len(targets)), targets], cache

    def backward(
        self, cache: ForwardCache, targets: np.ndarray, dlogp: np.ndarray, entropy_weight: np.ndarray | None = None,
        rewarded: RewardedIntegers | None = None,
    ) -> Params:
        """Gradient of ``sum_i dlogp[i] * log p(targets[i]) + entropy_weight[i] * H(p_i)`` with
        respect to every parameter (H the entropy of position i's next-token distribution), plus,
        with ``rewarded``, ``-sum_k weight[k] * (value[k] - v_k)^2 / 2``, v_k the number path's
        value for prompt ``prompt[k]``: a least-squares regression of the value on the integers
        that scored. Token by token the path learns only what it wrote, and from a value near 0
        it writes the first digit of 77 as the whole of 7, so the value settled near a tenth of
        the answers and the text policy wrote the rest. The regression's pull grows with the
        distance, not with the spread, so once the value is near, the tokens' gradients (which
        grow as the spread narrows) decide. The case switch's weights (``P_case``, ``Q_case``)
        and what they pass back to the hidden layer take only the first sum's terms with
        ``dlogp[i] > 0`` (``CASE_SWITCH_PRIOR`` says why)."""
        p = self.params
        feats = cache.features
        n = len(targets)
        text, mix = cache.text_probs, cache.number_mix
        picked = np.arange(n), targets
        # p = (1 - mix) text + mix number: the target's log p moves with the text logits as
        # much as the text policy is responsible for it
        with np.errstate(divide="ignore", invalid="ignore"):
            text_part = np.where(mix > 0, (1.0 - mix) * text[picked] / cache.probs[picked], 1.0)
        dlogits = -text * (dlogp * text_part)[:, None]
        dlogits[picked] += dlogp * text_part
        # the case switch learns from the tokens pushed up alone (``CASE_SWITCH_PRIOR``)
        dlogits_up = np.where((dlogp > 0)[:, None], dlogits, 0.0) / cache.temperature
        if entropy_weight is not None:
            # dH/dz_j = -(1 - mix) text_j (log p_j - sum_k text_k log p_k), on the
            # temperature-scaled logits (with mix 0: -p_j (log p_j + H))
            logp = np.where(cache.probs > 0, cache.log_probs, 0.0)
            expected = (text * logp).sum(axis=1, keepdims=True)
            dlogits -= (entropy_weight * (1.0 - mix))[:, None] * text * (logp - expected)
        dlogits /= cache.temperature
        grads: Params = {}
        grads["W2"] = cache.hidden.T @ dlogits
        grads["b2"] = GAINS["b2"] * dlogits.sum(axis=0)
        grads["B_step"] = GAINS["B_step"] * _rows_sum(feats.step, dlogits, p["B_step"].shape)
        spans, held = _spans(feats.numbers)
        dprompt_logits = _rows_sum(feats.prompt_of, dlogits, (len(spans), dlogits.shape[1]))
        span_prompt = np.nonzero(held)[0]  # the prompt of each span held, in the order spans[held] lists them
        grads["L_span"] = GAINS["L_span"] * _rows_sum(spans[held], dprompt_logits[span_prompt], p["L_span"].shape)
        # pointer: logits += gain[step] * log(COPY_FLOOR + attended @ copy_map)
        grads["P_gain"] = GAINS["P_gain"] * _rows_sum(feats.step, (dlogits * cache.gate).sum(axis=1), p["P_gain"].shape)
        dswitched = cache.pointer_gain[:, None] * dlogits / (COPY_FLOOR + cache.switched)
        # switched = (1 - s) copied + s copied[other case]; taking the other case twice is the identity
        switch = cache.switch[:, None]
        dcopied = (1.0 - switch) * dswitched + switch * dswitched[:, self._other_case]
        dswitched_up = cache.pointer_gain[:, None] * dlogits_up / (COPY_FLOOR + cache.switched)
        dswitch_logit = (dswitched_up * (cache.copied[:, self._other_case] - cache.copied)).sum(axis=1)
        dswitch_logit *= cache.switch * (1.0 - cache.switch)
        grads["P_case"] = GAINS["P_case"] * _rows_sum(feats.step, dswitch_logit, p["P_case"].shape)
        grads["Q_case"] = GAINS["Q_case"] * (cache.hidden.T @ dswitch_logit)
        dmap = cache.attended.T @ dcopied
        dmap_logits = cache.copy_map * (dmap - (dmap * cache.copy_map).sum(axis=1, keepdims=True))
        grads["M"] = GAINS["M"] * dmap_logits
        dmap_valid = np.where(self._offset_valid, dmap_logits, 0.0)
        letters, partners, entries = self._case_pairs
        grads["R"] = GAINS["R"] * (
            np.bincount(self._offset_index.ravel(), weights=dmap_valid.ravel(), minlength=p["R"].size)
            + np.bincount(entries, weights=dmap_logits[letters, partners], minlength=p["R"].size)
        ).astype(dmap.dtype, copy=False)
        dattended = dcopied @ cache.copy_map.T  # (N, V): per token of the slots
        dattention = np.take_along_axis(dattended, feats.slots, axis=1)
        grads["C"] = GAINS["C"] * (cache.by_count.T @ dlogits)
        dattention += np.take_along_axis(dlogits @ (GAINS["C"] * p["C"]).T, feats.counts, axis=1)
        grads["C_word"] = GAINS["C_word"] * (cache.by_word_count.T @ dlogits)
        dattention += np.take_along_axis(dlogits @ (GAINS["C_word"] * p["C_word"]).T, feats.word_counts, axis=1)
        dscores = cache.attention * (dattention - (cache.attention * dattention).sum(axis=1, keepdims=True))
        grads["P_pos"] = GAINS["P_pos"] * _rows_sum(feats.step, dscores[:, :-1], p["P_pos"].shape)
        grads["P_used"] = GAINS["P_used"] * np.asarray([(dscores * feats.used).sum()])
        grads["P_word_used"] = GAINS["P_word_used"] * np.asarray([(dscores * feats.word_used).sum()])
        grads["P_order"] = GAINS["P_order"] * np.einsum("ns,nsk->k", dscores, feats.order)
        grads["P_mark"] = GAINS["P_mark"] * np.einsum("ns,nsk->k", dscores, feats.marked)
        grads["P_rel"] = GAINS["P_rel"] * np.einsum("ns,nsk->k", dscores[:, :-1], feats.follows[:, :-1])
        grads["P_end"] = GAINS["P_end"] * (dscores[:, -1] @ self._end_inputs(feats))
        dwanted = self._per_token(dscores[:, :-1], feats.slots[:, :-1])  # (N, V)
        grads["P_key"] = GAINS["P_key"] * dwanted.sum(axis=0)
        grads["Q_key"] = GAINS["Q_key"] * (cache.hidden.T @ dwanted)
        grads["Q_pos"] = GAINS["Q_pos"] * (cache.hidden.T @ dscores[:, :-1])
        grads.update(self._number_backward(cache, targets, dlogp, entropy_weight, rewarded))
        dhidden = dlogits @ p["W2"].T + dswitch_logit[:, None] * (GAINS["Q_case"] * p["Q_case"])
        dhidden += dscores[:, :-1] @ (GAINS["Q_pos"] * p["Q_pos"]).T + dwanted @ (GAINS["Q_key"] * p["Q_key"]).T
        # the neighbours' weights score a prompt's slots alike at every row after it
        dslots = _rows_sum(feats.prompt_of, dscores[:, :-1], (len(feats.near_keys), dscores.shape[1] - 1))
        near = feats.near_keys[:, :-1]
        keyed = near >= 0
        dnear = np.broadcast_to(dslots[:, :, None], near.shape)[keyed]
        grads["P_near"] = GAINS["P_near"] * np.bincount(near[keyed], weights=dnear, minlength=p["P_near"].size)
        for field, fixed, query in WORD_KEYS:
            keys = getattr(feats, field)
            keyed = np.nonzero(keys >= 0)
            rows, dasked = keys[keyed], dscores[keyed]
            grads[fixed] = GAINS[fixed] * np.bincount(rows, weights=dasked, minlength=p[fixed].size)
            grads[query] = GAINS[query] * _rows_sum(rows, cache.hidden[keyed[0]] * dasked[:, None], p[query].shape)
            dhidden += _rows_sum(keyed[0], (GAINS[query] * p[query][rows]) * dasked[:, None], dhidden.shape)
        dpre = dhidden * (cache.pre > 0)
        grads["b1"] = dpre.sum(axis=0)
        # back through the normalisation: the mean and the spread move with every unit's input
        normed = cache.normed
        dsummed = (dpre - dpre.mean(axis=1, keepdims=True) - normed * (dpre * normed).mean(axis=1, keepdims=True)) / cache.spread
        # positions after the same prompt share its rows: sum their gradients first
        dprompt = _rows_sum(feats.prompt_of, dsummed, (feats.prompt_rows.shape[0], dsummed.shape[1]))
        grads["U"] = np.concatenate([feats.prompt_dense.T @ dprompt, feats.position_dense.T @ dsummed])
        grads["U_same"] = feats.repeats.T @ dprompt
        grads["U_level"] = self._level_grads(feats, dprompt)
        rows = np.concatenate([feats.prompt_rows.ravel(), feats.position_rows.ravel()])
        values = np.concatenate(
            [np.repeat(dprompt, feats.prompt_rows.shape[1], axis=0), np.repeat(dsummed, feats.position_rows.shape[1], axis=0)]
        )
        grads["W_in"] = _rows_sum(rows, values, p["W_in"].shape)
        grads["W_in"][self.absent_row] = 0.0  # padding of the bags contributes nothing, always
        return {k: g.astype(p[k].dtype, copy=False) for k, g in grads.items()}

    def _number_backward(
        self, cache: ForwardCache, targets: np.ndarray, dlogp: np.ndarray, entropy_weight: np.ndarray | None,
        rewarded: RewardedIntegers | None,
    ) -> Params:
        """The number path's gradients (see ``backward``, ``_number_value`` and ``numbers.py``)."""
        feats, v = cache.features, self.shape.vocab_size
        dvalue = np.zeros(len(targets))
        dmix = np.zeros(len(targets))
        dspread = 0.0
        logp = np.where(cache.probs > 0, cache.log_probs, 0.0)
        for group, shares, number in zip(feats.number_groups, cache.number_shares, cache.number_probs):
            rows, tokens = group.rows, group.spelling.tokens
            mix, chosen = cache.number_mix[rows], targets[rows]
            hit = chosen[:, None] == tokens[None, :]  # (R, U): the target among the next tokens
            number_target = (number * hit).sum(axis=1)
            picked = cache.probs[rows, chosen]
            # the number path's logits, as ``backward`` does the text logits'
            responsible = mix * number_target / picked
            dlogits = (dlogp[rows] * responsible)[:, None] * (hit - number)
            dmix[rows] = dlogp[rows] * (number_target - cache.text_probs[rows, chosen]) / picked
            if entropy_weight is not None:
                ew = entropy_weight[rows]
                logp_tokens = logp[rows[:, None], tokens[None, :]]
                expected = (number * logp_tokens).sum(axis=1, keepdims=True)
                dlogits -= (ew * mix)[:, None] * number * (logp_tokens - expected)
                # dH/dmix = -sum_j (number_j - text_j) log p_j
                dmix[rows] -= ew * ((number * logp_tokens).sum(axis=1) - (cache.text_probs[rows] * logp[rows]).sum(axis=1))
            dmix[rows] *= mix > 0  # where every next token of the path is masked, it was not mixed in
            dshares = np.where(number > 0, dlogits, 0.0) / cache.temperature
            dspread += float((dshares * shares.dlog_spread).sum())
            dvalue[rows] += (dshares * shares.dvalue).sum(axis=1)
        # the share is a sigmoid of N_mix[step]; where it was not mixed in, dmix is 0 already
        mixed = cache.number_mix
        dmix_logit = GAINS["N_mix"] * mixed * (1.0 - mixed) * dmix
        dprompt = _rows_sum(feats.prompt_of, dvalue, (len(feats.numbers),))
        if rewarded is not None and len(rewarded.prompt):
            values = self._prompt_values(feats)[rewarded.prompt]
            dprompt += _rows_sum(rewarded.prompt, rewarded.weight * (rewarded.value - values), dprompt.shape)
        dweight = dprompt[:, None] * feats.numbers  # (P, NUMBER_SLOTS): per number's weight
        place, before, after, word = (feats.number_context[..., i].ravel() for i in range(4))
        dword = np.bincount(word, weights=dweight.ravel(), minlength=self.shape.word_rows + 1)
        dword[-1] = 0.0  # the row for "no word after the number" stays at zero
        return {
            "N_mix": _rows_sum(feats.step, dmix_logit, self.params["N_mix"].shape),
            "N_spread": np.asarray([GAINS["N_spread"] * dspread]),
            "N_bias": np.asarray([BIAS_INPUT * GAINS["N_bias"] * dprompt.sum()]),
            "N_diff": GAINS["N_diff"] * (dprompt @ feats.number_diffs),
            "N_lone": np.asarray([GAINS["N_lone"] * (dprompt @ feats.lone_number)]),
            **self._tally_parts(GAINS["N_tally"] * (dprompt @ self._centred_tally(feats))),
            "N_place": GAINS["N_place"] * np.bincount(place, weights=dweight.ravel(), minlength=NUMBER_SLOTS),
            "N_before": GAINS["N_before"] * np.bincount(before, weights=dweight.ravel(), minlength=v),
            "N_after": GAINS["N_after"] * np.bincount(after, weights=dweight.ravel(), minlength=v),
            "N_word": GAINS["N_word"] * dword,
        }

    # -- scoring whole sequences ---------------------------------------------------------------

    def completion_logprobs(self, prompt: Sequence[int], completion: Sequence[int], temperature: float = 1.0) -> np.ndarray:
        """log p of each completion token given the prompt and the completion before it."""
        prompts = [prompt] * len(completion)
        generated = [completion[:i] for i in range(len(completion))]
        logp, _ = self.token_logprobs(self.features(prompts, generated), np.asarray(completion, dtype=np.int64), temperature)
        return logp


def first_message_bounds(tokens: np.ndarray) -> tuple[int, int]:
    """Where the conversation's first message lies in ``tokens``: after its role token, up to
    its end token."""
    if len(tokens) == 0 or tokens[0] not in _ROLE_IDS:
        return 0, 0
    ends = np.flatnonzero(tokens == END)
    return 1, int(ends[0]) if ends.size else len(tokens)


def earlier_message_bounds(tokens: np.ndarray) -> tuple[int, int]:
    """Where the user's message before the prompt's last message lies in ``tokens``: after its
    role token, up to its end token; (0, 0) when there is none."""
    users = np.flatnonzero(tokens == ROLE_TOKENS["user"])
    last_role = np.flatnonzero(_is_role(tokens[:-1]))
    users = users[users < last_role[-1]] if last_role.size else users[:0]
    if not users.size:
        return 0, 0
    start = int(users[-1]) + 1
    ends = np.flatnonzero(tokens[start:] == END)
    return start, start + int(ends[0]) if ends.size else start


def last_message_bounds(tokens: np.ndarray) -> tuple[int, int]:
    """Where the prompt's last message lies in ``tokens``: after the last role token before the
    final one (a generation prompt ends "role, content, end, assistant"), up to its end token."""
    roles = np.flatnonzero(_is_role(tokens[:-1]))
    start = int(roles[-1]) + 1 if roles.size else 0
    stop = len(tokens) - 1
    while stop > start and tokens[stop - 1] in (END, *_ROLE_IDS):
        stop -= 1
    return start, stop


def _neighbour_sources(shape: ModelShape) -> np.ndarray:
    """(pointer_slots, offsets): where, in a prompt's slots read as ``window, message, opening,
    earlier, tail, PAD`` (``PromptView``'s order, then the last message's last two tokens, last first,
    and a padding entry), the token ``k`` places before each slot in reading order lies, for
    each k of NEIGHBOUR_OFFSETS; the padding entry off either end.
    Window slot d reads after slot d + 1; slot j of a message's head (read from the message's
    start) after slot j - 1; the end slot (last) after the last message's last tokens, as its
    end token does, and, read backwards, after the message's first tokens: a span copied to the
    message's end, or backwards to its start, is followed by the end slot as by any other."""
    w, m = shape.window, shape.message_slots
    tail = w + HEADS * m
    pad = tail + END_SLOT_TAIL
    out = np.full((shape.pointer_slots, len(NEIGHBOUR_OFFSETS)), pad, dtype=np.int64)
    for k_index, k in enumerate(NEIGHBOUR_OFFSETS):
        source = np.arange(w) + k
        inside = (source >= 0) & (source < w)
        out[:w, k_index][inside] = source[inside]
        for at in range(w, tail, m):
            source = np.arange(m) - k
            inside = (source >= 0) & (source < m)
            out[at : at + m, k_index][inside] = at + source[inside]
        if 1 <= k <= END_SLOT_TAIL:
            out[-1, k_index] = tail + k - 1
        elif -END_SLOT_TAIL <= k <= -1:  # read backwards, the message's first characters lead to the end
            out[-1, k_index] = w - k - 1
    return out


def _case_pairs(tokenizer: CharTokenizer, first_entry: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Every letter, the same letter in the other case, and the entry of R that weighs that
    pair: ``first_entry`` from a lowercase letter, the next from an uppercase one. Changing case
    is not one code distance both ways (a is 32 after A, and 32 before a is "!"), so a map that
    swaps case one way for some letters and the other way for others needs its own weights."""
    letters, partners, entries = [], [], []
    for token in range(tokenizer.first_char_id, tokenizer.vocab_size):
        text = tokenizer.token_text(token)
        if text.isalpha() and text.swapcase() != text:
            letters.append(token)
            partners.append(tokenizer.encode(text.swapcase())[0])
            entries.append(first_entry + text.isupper())
    return np.asarray(letters, dtype=np.int64), np.asarray(partners, dtype=np.int64), np.asarray(entries, dtype=np.int64)


def _rank_word(out: np.ndarray, start: int, stop: int, column: int, places: tuple[int, int]) -> None:
    """Writes a ranked word's two places in order (from either end) into ``out[start:stop]`` at
    ``column`` and the next, each as place * MAX_ITEM_CHARS + the character's offset in the word."""
    offsets = np.arange(min(stop - start, MAX_ITEM_CHARS))
    out[start : start + len(offsets), column : column + 2] = np.outer(offsets, [1, 1]) + np.asarray(places) * MAX_ITEM_CHARS


def _trailing(flags: np.ndarray) -> np.ndarray:
    """(N,): how many of the last entries of each row of ``flags`` (N, T) are all True."""
    return np.cumprod(flags[:, ::-1], axis=1, dtype=np.int64).sum(axis=1)


def _token_bits(tokens: np.ndarray) -> np.ndarray:
    """Sets of tokens, (..., V) bool, as bit sets (..., ceil(V / 64)) of uint64, token t at bit
    t % 64 of word t // 64: a test against the tokens written so far is one AND per word."""
    width = -(-tokens.shape[-1] // 64) * 64
    padded = np.zeros((*tokens.shape[:-1], width), dtype=bool)
    padded[..., : tokens.shape[-1]] = tokens
    return np.packbits(padded, axis=-1, bitorder="little").view("<u8")


def _stack(rows: list[np.ndarray], *shape: int) -> np.ndarray:
    """The prompts' rows stacked; an empty batch of rows of ``shape`` for no prompts."""
    return np.stack(rows) if rows else np.zeros((0, *shape), dtype=np.int64)


def _message_starts(tokens: np.ndarray) -> np.ndarray:
    """(len(tokens),): for each token, the index of the role token that opens its message (0
    before the first): tokens with the same value are in the same message."""
    return np.maximum.accumulate(np.where(_is_role(tokens), np.arange(len(tokens)), 0))


def _words_between(starts: list[int], keys: list[int], begin: int, end: int) -> list[int]:
    """The keys of the words that start in ``[begin, end)``: one message's words, from the
    prompt's (a message's words never run past it: role and end tokens are not word characters)."""
    return keys[bisect_left(starts, begin) : bisect_left(starts, end)]


def _hash_rows(keys: np.ndarray, rows: int) -> np.ndarray:
    """A fixed multiplicative hash of non-negative integer keys into ``rows`` buckets."""
    mixed = (keys.astype(np.uint64) * np.uint64(0x9E3779B97F4A7C15)) >> np.uint64(29)
    return (mixed % np.uint64(rows)).astype(np.int64)


def _levels_reached(numbers: np.ndarray) -> np.ndarray:
    """(P, NUMBER_SLOTS) int: how many of ``NUMBER_LEVELS`` each number's magnitude reaches."""
    return np.searchsorted(NUMBER_LEVELS, np.abs(numbers), side="right")


def _spans(numbers: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(P, NUMBER_SLOTS * len(SPAN_WIDTHS)): the rows of ``L_span`` each number lies in, and
    whether it does (a slot without a number, or with one under 1, lies in none)."""
    reached = _levels_reached(numbers)  # (P, NUMBER_SLOTS)
    slot_base = np.arange(numbers.shape[1]) * int(SPAN_OFFSETS[-1])
    rows = [slot_base + offset + reached // width for offset, width in zip(SPAN_OFFSETS, SPAN_WIDTHS)]
    spans = np.stack(rows, axis=2).reshape(len(numbers), numbers.shape[1] * len(SPAN_WIDTHS))  # no -1: a batch may hold no prompt
    held = np.repeat(reached > 0, len(SPAN_WIDTHS), axis=1)
    return spans, held


def _rows_sum(index: np.ndarray, values: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
    """``out[index[i]] += values[i]`` into zeros of ``shape`` (sort + segment sums: much faster
    than ``np.add.at`` for the many repeated rows of a batch)."""
    out = np.zeros(shape, dtype=values.dtype)
    if index.size == 0:
        return out
    order = np.argsort(index, kind="stable")
    ordered = index[order]
    starts = np.flatnonzero(np.concatenate(([True], ordered[1:] != ordered[:-1])))
    out[ordered[starts]] = np.add.reduceat(values[order], starts, axis=0)
    return out
