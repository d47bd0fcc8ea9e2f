"""The local policy: a small autoregressive model over the character vocabulary, in NumPy.

The next token of an assistant turn is predicted from features of its context:

* the last ``window`` prompt tokens, right-aligned (slot d holds the token d places before the
  end of the prompt) -- the shipped tasks' answers are functions of the prompt's last characters;
* the tokens generated so far in this turn (slot j holds the j-th generated token), the number
  generated (the step) and the previous token;
* the numeric value of digit tokens in those slots, a shared direction per slot (comparing two
  numbers of the prompt is then linear);
* for each "digit, token, digit" pattern among the last ``infix_window`` prompt slots, the sum and
  the difference of the two digits keyed by the token between them (hashed into ``infix_rows``
  embedding rows) -- so arithmetic generalises to combinations never trained on: a held-out
  "3+4" shares its feature with the trained "2+5".

Those sparse features are summed into one ReLU hidden layer (an embedding-bag, i.e. a linear
layer on one-hot inputs) that produces generation logits. Beside it runs a copy path: at step t,
the window token in slot d adds ``C[t, d] * M[token]`` to the logits, with ``M`` initialised to the
identity, so "emit the prompt character k places from the end" is a single weight to learn.
A per-step output bias lets the policy learn answer lengths directly.

Each "digit, token, digit" pattern row also has direct output weights per step, ``O[row, step]``,
added to the logits. The hidden layer is shared by every item, so in RL it mostly learns what
helps on average (a global answer bias); the direct weights are only moved by the items having
that pattern, so an item-specific answer ("a + b is 7: emit 7, then end") is learned as fast as
the global biases and carries over to held-out items with the same pattern.

Gradients are written out by hand (``backward``) and checked against finite differences in the
tests. Parameters are a plain dict of arrays so the optimiser and checkpoints treat them alike.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np

from hermes_rl_mcp.trainer.constraints import ChoiceConstraint
from hermes_rl_mcp.trainer.tokenizer import END, PAD, CharTokenizer

Params = dict[str, np.ndarray]

# Output-side parameters enter the logits multiplied by a fixed gain. Adam moves every raw
# parameter by about the learning rate per step whatever its gradient's scale, so without the
# gain an output bias or a copy weight would need thousands of steps to move a logit by a few
# nats; with it, a few hundred steps at the default learning rate suffice.
GAINS = {"b2": 10.0, "B_step": 10.0, "C": 10.0, "M": 4.0, "O": 40.0}


@dataclass(frozen=True)
class ModelShape:
    vocab_size: int
    hidden_size: int = 64
    window: int = 16  # prompt tokens seen, counted back from the end of the prompt
    gen_slots: int = 8  # generated tokens seen by position
    max_steps: int = 16  # steps with their own embedding, output bias and copy weights
    infix_window: int = 10  # "digit, token, digit" patterns are looked for in this many last slots
    infix_rows: int = 2048  # hashed embedding rows of those patterns
    direct_steps: int = 4  # steps with their own direct pattern-to-logit weights (later steps share the last)

    @property
    def num_infix(self) -> int:
        return max(self.infix_window - 2, 0)

    @property
    def num_sparse(self) -> int:
        return self.window + self.gen_slots + 2 + self.num_patterns

    @property
    def num_patterns(self) -> int:
        """Hashed pattern features per position: sum and difference of each infix pattern, and
        of the two digits nearest the end of the prompt."""
        return 2 * self.num_infix + 2

    @property
    def num_dense(self) -> int:
        return self.window + self.gen_slots

    @property
    def feature_rows(self) -> int:
        v = self.vocab_size
        # ... + the hashed infix rows + one always-zero row for "no pattern here"
        return self.window * v + self.gen_slots * v + self.max_steps + v + self.infix_rows + 1

    def to_dict(self) -> dict[str, int]:
        return {
            "vocab_size": self.vocab_size,
            "hidden_size": self.hidden_size,
            "window": self.window,
            "gen_slots": self.gen_slots,
            "max_steps": self.max_steps,
            "infix_window": self.infix_window,
            "infix_rows": self.infix_rows,
            "direct_steps": self.direct_steps,
        }


@dataclass
class Features:
    """Model inputs for N positions, each predicting one next token."""

    sparse: np.ndarray  # (N, num_sparse) int: rows of the input embedding table, summed
    dense: np.ndarray  # (N, num_dense) float: digit values of window and generated slots
    step: np.ndarray  # (N,) int: generation step, capped at max_steps - 1
    window: np.ndarray  # (N, window) int: prompt tokens, slot d = d places before the prompt end

    def __len__(self) -> int:
        return int(self.step.shape[0])


@dataclass
class ForwardCache:
    features: Features
    pre: np.ndarray
    hidden: np.ndarray
    copy_weights: np.ndarray  # C[step] per row, (N, window)
    copy_values: np.ndarray  # M[window] per row, (N, window, V)
    direct_index: np.ndarray  # rows of O read per position, (N, num_patterns); -1 where no pattern
    probs: np.ndarray
    temperature: float


class PolicyModel:
    """Parameters plus forward, sampling-ready log-probabilities and the hand-written backward."""

    def __init__(self, params: Params, shape: ModelShape, tokenizer: CharTokenizer) -> None:
        self.params = params
        self.shape = shape
        self.tokenizer = tokenizer
        dtype = params["W2"].dtype
        values = [0.0 if v is None else (v - 4.5) / 3.0 for v in tokenizer.digit_values]
        self._digit_value = np.asarray(values, dtype=dtype)
        allowed = np.zeros(shape.vocab_size, dtype=bool)
        allowed[tokenizer.generatable_ids()] = True
        self.allowed = allowed
        v = shape.vocab_size
        self._off_gen = shape.window * v
        self._off_step = self._off_gen + shape.gen_slots * v
        self._off_prev = self._off_step + shape.max_steps
        self.absent_row = shape.feature_rows - 1
        digit = np.full(shape.vocab_size, -1, dtype=np.int64)
        for token, value in enumerate(tokenizer.digit_values):
            if value is not None:
                digit[token] = int(value)
        self._digit = digit
        self._digit_class = int(np.flatnonzero(digit == 0)[0])
        self._off_infix = self._off_prev + v

    @property
    def dtype(self) -> np.dtype:
        return self.params["W2"].dtype

    # -- construction -------------------------------------------------------------------------

    @classmethod
    def initialise(
        cls,
        tokenizer: CharTokenizer,
        *,
        hidden_size: int = 64,
        seed: int = 0,
        dtype: type = np.float32,
        window: int = 16,
        gen_slots: int = 8,
        max_steps: int = 16,
        infix_window: int = 10,
        infix_rows: int = 2048,
        direct_steps: int = 4,
        copy_prior: float = 2.0,
        end_prior: float = 3.0,
        numeric_scale: float = 0.2,
    ) -> PolicyModel:
        """A fresh policy. Its initial distribution prefers short answers built from the prompt's
        characters (``copy_prior`` on the copy weights, ``end_prior`` on ending after the first
        token): RL from scratch needs some answers that score before it can learn anything."""
        shape = ModelShape(
            tokenizer.vocab_size, hidden_size, window, gen_slots, max_steps, min(infix_window, window), infix_rows, direct_steps
        )
        rng = np.random.default_rng(seed)
        v, h = shape.vocab_size, hidden_size
        params: Params = {
            "W_in": rng.normal(0.0, 1.0 / np.sqrt(shape.window + shape.gen_slots + 4), (shape.feature_rows, h)),
            "U": rng.normal(0.0, numeric_scale, (shape.num_dense, h)),
            "b1": np.zeros(h),
            "W2": rng.normal(0.0, 0.1 / np.sqrt(h), (h, v)),
            "b2": np.zeros(v),
            "B_step": np.zeros((max_steps, v)),
            "C": np.full((max_steps, window), copy_prior),
            "M": np.eye(v),
            "O": np.zeros((infix_rows * direct_steps, v)),  # no pattern has an opinion at first
        }
        params["B_step"][0, END] = -end_prior
        params["B_step"][1:, END] = end_prior
        params["W_in"][-1] = 0.0  # the no-pattern row
        for key, gain in GAINS.items():
            params[key] = params[key] / gain
        return cls({k: np.ascontiguousarray(a, dtype=dtype) for k, a in params.items()}, shape, tokenizer)

    def copy(self) -> PolicyModel:
        """An independent snapshot (the policy server samples from one while the trainer steps)."""
        return PolicyModel({k: a.copy() for k, a in self.params.items()}, self.shape, self.tokenizer)

    def with_params(self, params: Params) -> PolicyModel:
        return PolicyModel(params, self.shape, self.tokenizer)

    # -- features -------------------------------------------------------------------------------

    def features(self, prompts: Sequence[Sequence[int]], generated: Sequence[Sequence[int]]) -> Features:
        """Inputs for predicting the next token after ``prompts[i] + generated[i]`` for each i."""
        s = self.shape
        n = len(prompts)
        window = np.full((n, s.window), PAD, dtype=np.int64)
        gen = np.full((n, s.gen_slots), PAD, dtype=np.int64)
        step = np.zeros(n, dtype=np.int64)
        prev = np.zeros(n, dtype=np.int64)
        for i, (prompt, done) in enumerate(zip(prompts, generated)):
            tail = prompt[-s.window :][::-1]
            window[i, : len(tail)] = tail
            head = done[: s.gen_slots]
            gen[i, : len(head)] = head
            step[i] = len(done)
            prev[i] = done[-1] if len(done) else (prompt[-1] if len(prompt) else PAD)
        return self._assemble(window, gen, step, prev)

    def features_for_samples(self, prompt: Sequence[int], generated: np.ndarray) -> Features:
        """Inputs for n samples that share ``prompt`` and have each generated ``generated[i]``."""
        s = self.shape
        n, t = generated.shape
        tail = np.full(s.window, PAD, dtype=np.int64)
        recent = list(prompt[-s.window :])[::-1]
        tail[: len(recent)] = recent
        window = np.broadcast_to(tail, (n, s.window))
        gen = np.full((n, s.gen_slots), PAD, dtype=np.int64)
        k = min(t, s.gen_slots)
        gen[:, :k] = generated[:, :k]
        step = np.full(n, t, dtype=np.int64)
        if t:
            prev = generated[:, -1].astype(np.int64)
        else:
            prev = np.full(n, prompt[-1] if len(prompt) else PAD, dtype=np.int64)
        return self._assemble(np.ascontiguousarray(window), gen, step, prev)

    def _assemble(self, window: np.ndarray, gen: np.ndarray, step: np.ndarray, prev: np.ndarray) -> Features:
        s = self.shape
        v = s.vocab_size
        capped = np.minimum(step, s.max_steps - 1)
        # A digit's slot embedding is shared by all digits: its value reaches the hidden layer
        # through the numeric and infix features only, so those (which generalise) are
        # what the policy learns arithmetic with, rather than memorising digit combinations.
        slot_tokens = np.where(self._digit[window] >= 0, self._digit_class, window)
        sparse = np.concatenate(
            [
                slot_tokens + np.arange(s.window) * v,
                gen + self._off_gen + np.arange(s.gen_slots) * v,
                (capped + self._off_step)[:, None],
                (prev + self._off_prev)[:, None],
                self._infix_features(window),
            ],
            axis=1,
        )
        dense = self._digit_value[np.concatenate([window, gen], axis=1)]
        return Features(sparse=sparse, dense=dense, step=capped, window=window)

    def _infix_features(self, window: np.ndarray) -> np.ndarray:
        """Rows of (position, middle token, a + b) and (position, middle token, a - b) for each
        slot i holding digit b, i + 1 any token, i + 2 digit a (the prompt reads "a ? b")."""
        k = self.shape.num_infix
        digits = self._digit[window[:, : k + 2]]
        near, far, mid = digits[:, :k], digits[:, 2 : k + 2], window[:, 1 : k + 1]
        both = (near >= 0) & (far >= 0)
        key = (np.arange(k) * self.shape.vocab_size + mid) * 38
        infix_sum = _hash_rows(key + far + near, self.shape.infix_rows) + self._off_infix
        infix_diff = _hash_rows(key + 19 + far - near + 9, self.shape.infix_rows) + self._off_infix
        return np.concatenate(
            [
                np.where(both, infix_sum, self.absent_row),
                np.where(both, infix_diff, self.absent_row),
                self._pair_features(window),
            ],
            axis=1,
        )

    def _pair_features(self, window: np.ndarray) -> np.ndarray:
        """Rows of (slots, token before the nearer digit, a + b) and (..., a - b) for the two digits
        nearest the end of the prompt, b the nearer one and a the farther, wherever they are
        ("at 2 goal 5": comparing them says which way to go; "7-9": the answer)."""
        n, w = window.shape
        digits = self._digit[window]
        is_digit = digits >= 0
        rows = np.arange(n)
        near_slot = np.argmax(is_digit, axis=1)
        has_near = is_digit[rows, near_slot]
        rest = is_digit.copy()
        rest[rows, near_slot] = False
        far_slot = np.argmax(rest, axis=1)
        both = has_near & rest[rows, far_slot]
        near, far = digits[rows, near_slot], digits[rows, far_slot]
        before = window[rows, np.minimum(near_slot + 1, w - 1)]  # the token read just before b
        # a key space of its own, apart from the infix keys (which stay below num_infix * V * 38)
        key = (((w + near_slot) * w + far_slot) * self.shape.vocab_size + before) * 38
        pair_sum = _hash_rows(key + far + near, self.shape.infix_rows) + self._off_infix
        pair_diff = _hash_rows(key + 19 + far - near + 9, self.shape.infix_rows) + self._off_infix
        return np.stack([np.where(both, pair_sum, self.absent_row), np.where(both, pair_diff, self.absent_row)], axis=1)

    # -- forward / backward ---------------------------------------------------------------------

    def forward(self, feats: Features, temperature: float = 1.0, allowed: np.ndarray | None = None) -> ForwardCache:
        """Next-token probabilities at ``temperature`` (> 0) for every position in ``feats``;
        ``allowed`` (N, V), when given, masks each position's tokens further (constrained decoding)."""
        p = self.params
        pre = p["W_in"][feats.sparse].sum(axis=1) + feats.dense @ p["U"] + p["b1"]
        hidden = np.maximum(pre, 0.0)
        copy_weights = GAINS["C"] * p["C"][feats.step]
        copy_values = GAINS["M"] * p["M"][feats.window]
        logits = hidden @ p["W2"] + GAINS["b2"] * p["b2"] + GAINS["B_step"] * p["B_step"][feats.step]
        logits += np.einsum("nk,nkv->nv", copy_weights, copy_values)
        direct_index = self._direct_index(feats)
        present = direct_index >= 0
        if present.any():
            rows, cols = np.nonzero(present)
            np.add.at(logits, rows, GAINS["O"] * p["O"][direct_index[rows, cols]])
        logits = logits / temperature
        logits[:, ~self.allowed] = -np.inf
        if allowed is not None:
            logits[~allowed] = -np.inf
        logits -= logits.max(axis=1, keepdims=True)
        probs = np.exp(logits)
        probs /= probs.sum(axis=1, keepdims=True)
        return ForwardCache(feats, pre, hidden, copy_weights, copy_values, direct_index, probs, temperature)

    def _direct_index(self, feats: Features) -> np.ndarray:
        """Row of ``O`` for each infix pattern of each position (its step capped), -1 for none."""
        s = self.shape
        pattern = feats.sparse[:, feats.sparse.shape[1] - s.num_patterns :] - self._off_infix
        step = np.minimum(feats.step, s.direct_steps - 1)[:, None]
        return np.where(pattern < s.infix_rows, pattern * s.direct_steps + step, -1)

    def token_logprobs(
        self, feats: Features, targets: np.ndarray, temperature: float = 1.0, allowed: np.ndarray | None = None
    ) -> tuple[np.ndarray, ForwardCache]:
        """log p(targets[i]) at each position, and the cache for ``backward``."""
        cache = self.forward(feats, temperature, allowed)
        picked = cache.probs[np.arange(len(targets)), targets]
        with np.errstate(divide="ignore"):
            return np.log(picked), cache

    def backward(
        self, cache: ForwardCache, targets: np.ndarray, dlogp: np.ndarray, entropy_weight: np.ndarray | None = None
    ) -> Params:
        """Gradient of ``sum_i dlogp[i] * log p(targets[i]) + entropy_weight[i] * H(p_i)`` with
        respect to every parameter (H the entropy of position i's next-token distribution)."""
        p = self.params
        s = self.shape
        feats = cache.features
        n = len(targets)
        dlogits = -cache.probs * dlogp[:, None]
        dlogits[np.arange(n), targets] += dlogp
        if entropy_weight is not None:
            # dH/dz_j = -p_j (log p_j + H), on the temperature-scaled logits
            logp = np.log(np.where(cache.probs > 0, cache.probs, 1.0))
            entropy = -(cache.probs * logp).sum(axis=1, keepdims=True)
            dlogits -= entropy_weight[:, None] * cache.probs * (logp + entropy)
        dlogits /= cache.temperature
        grads: Params = {}
        grads["W2"] = cache.hidden.T @ dlogits
        grads["b2"] = GAINS["b2"] * dlogits.sum(axis=0)
        grads["B_step"] = GAINS["B_step"] * _rows_sum(feats.step, dlogits, p["B_step"].shape)
        # copy path: logits += sum_d C[step, d] * M[window_d]
        dcopy_w = np.einsum("nkv,nv->nk", cache.copy_values, dlogits)
        grads["C"] = GAINS["C"] * _rows_sum(feats.step, dcopy_w, p["C"].shape)
        weighted = (cache.copy_weights[:, :, None] * dlogits[:, None, :]).reshape(-1, s.vocab_size)
        grads["M"] = GAINS["M"] * _rows_sum(feats.window.ravel(), weighted, p["M"].shape)
        present = cache.direct_index >= 0
        rows, cols = np.nonzero(present)
        grads["O"] = GAINS["O"] * _rows_sum(cache.direct_index[rows, cols], dlogits[rows], p["O"].shape)
        dhidden = dlogits @ p["W2"].T
        dpre = dhidden * (cache.pre > 0)
        grads["b1"] = dpre.sum(axis=0)
        grads["U"] = feats.dense.T @ dpre
        grads["W_in"] = _rows_sum(feats.sparse.ravel(), np.repeat(dpre, feats.sparse.shape[1], axis=0), p["W_in"].shape)
        grads["W_in"][self.absent_row] = 0.0  # "no pattern here" contributes nothing, always
        return grads

    # -- scoring whole sequences ---------------------------------------------------------------

    def completion_logprobs(self, prompt: Sequence[int], completion: Sequence[int], temperature: float = 1.0) -> np.ndarray:
        """log p of each completion token given the prompt and the completion before it."""
        prompts = [prompt] * len(completion)
        generated = [completion[:i] for i in range(len(completion))]
        logp, _ = self.token_logprobs(self.features(prompts, generated), np.asarray(completion, dtype=np.int64), temperature)
        return logp


def _hash_rows(keys: np.ndarray, rows: int) -> np.ndarray:
    """A fixed multiplicative hash of non-negative integer keys into ``rows`` buckets."""
    mixed = (keys.astype(np.uint64) * np.uint64(0x9E3779B97F4A7C15)) >> np.uint64(29)
    return (mixed % np.uint64(rows)).astype(np.int64)


def _rows_sum(index: np.ndarray, values: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
    """``out[index[i]] += values[i]`` into zeros of ``shape`` (sort + segment sums: much faster
    than ``np.add.at`` for the many repeated rows of a batch)."""
    out = np.zeros(shape, dtype=values.dtype)
    if index.size == 0:
        return out
    order = np.argsort(index, kind="stable")
    ordered = index[order]
    starts = np.flatnonzero(np.r_[True, ordered[1:] != ordered[:-1]])
    out[ordered[starts]] = np.add.reduceat(values[order], starts, axis=0)
    return out


@dataclass
class Generation:
    token_ids: list[int]
    logprobs: list[float]
    finish_reason: str  # "stop" (end token or stop string) or "length"


def generate(
    model: PolicyModel,
    prompt: Sequence[int],
    *,
    n: int,
    max_tokens: int,
    temperature: float,
    rng: np.random.Generator,
    top_p: float = 1.0,
    stop: Sequence[str] = (),
    constraint: ChoiceConstraint | None = None,
) -> list[Generation]:
    """Sample ``n`` continuations of ``prompt`` together, one vectorised step per token.

    Logprobs are those of the distribution actually sampled from: after the constraint's mask,
    temperature and top-p; temperature 0 is greedy decoding, whose chosen tokens have
    log-probability 0.
    """
    tok = model.tokenizer
    tokens = np.zeros((n, 0), dtype=np.int64)
    logps = np.zeros((n, 0))
    active = np.ones(n, dtype=bool)
    lengths = np.full(n, max_tokens)
    finish = ["length"] * n
    for t in range(max_tokens):
        rows = np.flatnonzero(active)
        if rows.size == 0:
            break
        feats = model.features_for_samples(prompt, tokens[rows])
        allowed = None
        if constraint is not None:
            # every row so far followed the trie, so each has a mask
            allowed = np.stack([constraint.allowed(tokens[row]) for row in rows])
        if temperature == 0:
            probs = model.forward(feats, 1.0, allowed).probs
            chosen = probs.argmax(axis=1)
            chosen_lp = np.zeros(rows.size)
        else:
            probs = model.forward(feats, temperature, allowed).probs
            if top_p < 1.0:
                probs = _nucleus(probs, top_p)
            cumulative = np.cumsum(probs, axis=1)
            draws = rng.random(rows.size) * cumulative[:, -1]
            chosen = np.minimum((cumulative < draws[:, None]).sum(axis=1), probs.shape[1] - 1)
            with np.errstate(divide="ignore"):
                chosen_lp = np.log(probs[np.arange(rows.size), chosen])
        column = np.full(n, PAD, dtype=np.int64)
        column[rows] = chosen
        lp_column = np.zeros(n)
        lp_column[rows] = chosen_lp
        tokens = np.concatenate([tokens, column[:, None]], axis=1)
        logps = np.concatenate([logps, lp_column[:, None]], axis=1)
        for row, token in zip(rows, chosen):
            if token == END:
                active[row], lengths[row], finish[row] = False, t + 1, "stop"
            elif stop:
                text = tok.decode(tokens[row, : t + 1])
                if any(text.endswith(s) for s in stop):
                    active[row], lengths[row], finish[row] = False, t + 1, "stop"
    return [
        Generation(tokens[i, : lengths[i]].tolist(), logps[i, : lengths[i]].tolist(), finish[i]) for i in range(n)
    ]


def _nucleus(probs: np.ndarray, top_p: float) -> np.ndarray:
    """Keep each row's most likely tokens up to cumulative mass ``top_p`` and renormalise."""
    order = np.argsort(-probs, axis=1)
    sorted_probs = np.take_along_axis(probs, order, axis=1)
    before = np.cumsum(sorted_probs, axis=1) - sorted_probs
    keep_sorted = before < top_p
    keep = np.zeros_like(keep_sorted)
    np.put_along_axis(keep, order, keep_sorted, axis=1)
    kept = np.where(keep, probs, 0.0)
    return kept / kept.sum(axis=1, keepdims=True)
