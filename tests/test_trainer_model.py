"""The local policy: tokenizer and chat template, gradients, sampling consistency."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

import numpy as np
import pytest

from hermes_rl_mcp.trainer.constraints import ChoiceConstraint, ConstraintError
from hermes_rl_mcp.trainer.model import (
    BIAS_INPUT, COMPARISONS, GAINS, HEADS, LEVELS_STEP, NEIGHBOUR_OFFSETS, NUMBER_LEVELS, REPEAT_STEP, SIGNS, STATISTICS, SPAN_OFFSETS, PolicyModel,
    ViewCache,
)
from hermes_rl_mcp.trainer.numbers import RewardedIntegers, read_numbers
from hermes_rl_mcp.trainer.sampling import SampleJob, generate, generate_batch
from hermes_rl_mcp.trainer.tokenizer import ASSISTANT, END, PAD, USER, CharTokenizer, ChatTemplateError

TOK = CharTokenizer()


def small_model(dtype: type = np.float64, seed: int = 1) -> PolicyModel:
    model = PolicyModel.initialise(
        TOK,
        hidden_size=12,
        seed=seed,
        dtype=dtype,
        window=7,
        message_slots=6,
        gen_slots=3,
        max_steps=4,
        max_count=3,
        bag_chars=5,
        bag_words=3,
        word_rows=16,
        length_range=12,
    )
    rng = np.random.default_rng(seed + 100)
    for array in model.params.values():  # move off the initial point so every path carries gradient
        array += rng.normal(0.0, 0.3, array.shape)
    # the number path's spread is an exponential: the same shift could make it tiny, and logits
    # of -1e5 leave finite differences at the mercy of rounding
    model.params["N_spread"][:] = np.log(3.0) / GAINS["N_spread"]
    # the bias enters the value times BIAS_INPUT: the same shift would put the value tens away
    model.params["N_bias"] /= BIAS_INPUT
    return model


def explored_texts(model: PolicyModel, prompt: list[int], n: int, max_tokens: int, rng: np.random.Generator, **shares: float) -> list[str]:
    """The texts of ``n`` samples of ``prompt``, every one replaced by exploration (``shares``:
    ``explore``'s case and rewrite shares)."""
    from hermes_rl_mcp.trainer.exploration import explore

    samples = generate(model, prompt, n=n, max_tokens=max_tokens, temperature=1.0, rng=rng)
    explored = explore(model, prompt, samples, share=1.0, max_tokens=max_tokens, temperature=1.0, constraint=None, rng=rng, **shares)
    return [TOK.decode(s.token_ids) for s in explored]


def numeric_gradient(objective: Callable[[], float], array: np.ndarray, index: int, step: float = 1e-6) -> float:
    """The central finite difference of ``objective()`` in ``array.flat[index]``, which it leaves
    as it found it."""
    original = array.flat[index]
    array.flat[index] = original + step
    up = objective()
    array.flat[index] = original - step
    down = objective()
    array.flat[index] = original
    return (up - down) / (2 * step)


def test_chat_template_is_prefix_consistent() -> None:
    first = [{"role": "user", "content": "at 2 goal 5"}]
    prompt = TOK.generation_prompt(first)
    assert prompt[0] == USER and prompt[-1] == ASSISTANT and prompt[-2] == END
    reply = TOK.encode("R") + [END]
    longer = first + [{"role": "assistant", "content": "R"}, {"role": "user", "content": "at 3 goal 5"}]
    assert TOK.generation_prompt(longer)[: len(prompt) + len(reply)] == prompt + reply
    assert TOK.decode(TOK.encode("Hello, world!\n")) == "Hello, world!\n"
    assert TOK.encode("é") == [1]  # outside printable ASCII: the unknown token


def test_chat_template_rejects_bad_messages_with_a_reason() -> None:
    with pytest.raises(ChatTemplateError, match="valid roles"):
        TOK.render_messages([{"role": "robot", "content": "hi"}])
    with pytest.raises(ChatTemplateError, match="string or a list of text parts"):
        TOK.render_messages([{"role": "user", "content": 5}])
    parts = [{"role": "user", "content": [{"type": "text", "text": "ab"}, {"type": "text", "text": "c"}]}]
    assert TOK.render_messages(parts) == TOK.render_messages([{"role": "user", "content": "abc"}])


def test_log_likelihood_gradient_matches_finite_differences() -> None:
    model = small_model()
    prompts = [TOK.generation_prompt([{"role": "user", "content": c}]) for c in ("7+8", "hello", "3-9")]
    # a conversation, so the opening-message view carries gradient too
    prompts.append(TOK.generation_prompt([
        {"role": "user", "content": "at 2 goal 5"}, {"role": "assistant", "content": "R"}, {"role": "user", "content": "ok 3"},
    ]))
    # "hello" continues with the copy map's images of "he", so the neighbour scores carry gradient;
    # "wxyz" with those of "yz", its last characters, so the end slot's neighbour scores do too
    prompts.append(TOK.generation_prompt([{"role": "user", "content": "wxyz"}]))
    prompts.append(prompts[3])  # a number answered from the last message's number and the opening's
    # a word of the prompt written whole, so the pointer's word coverage carries gradient
    prompts.append(TOK.generation_prompt([{"role": "user", "content": "ab, cd"}]))
    # the case switch learns from the tokens pushed up alone (checked on its own, below): here it
    # does not read the hidden layer, so the hidden layer's gradient is the whole one
    model.params["Q_case"][:] = 0.0
    images = model._images()
    generated = [[], images[TOK.encode("he")].tolist(), TOK.encode("-"), TOK.encode("ab"), images[TOK.encode("yz")].tolist(), [], TOK.encode("cd, ")]
    targets = np.asarray(TOK.encode("1l6Rq7a"))
    weights = np.array([0.7, -1.3, 0.4, 2.0, -0.9, 0.6, 0.8])
    entropy_weights = np.array([0.2, 0.5, -0.3, 0.1, 0.4, 0.3, -0.2])  # the entropy bonus's gradient is checked too
    feats = model.features(prompts, generated)
    temperature = 0.8

    # integers that scored, which the number path's value is regressed on: a few units from the
    # values (the random weights put some values a hundred away, and squares of that size would
    # leave the finite differences to rounding)
    regressed = np.array([0, 2, 3])
    targets_of = model._prompt_values(feats)[regressed] + np.array([4.0, -3.0, 5.0])
    rewarded = RewardedIntegers(regressed, targets_of, np.array([-0.8, 0.5, -1.1]))

    def objective() -> float:
        logp, cache = model.token_logprobs(feats, targets, temperature)
        probs = cache.probs
        entropy = -(probs * np.log(np.where(probs > 0, probs, 1.0))).sum(axis=1)
        squares = -0.5 * (rewarded.value - model._prompt_values(feats)[rewarded.prompt]) ** 2
        return float(logp @ weights + entropy @ entropy_weights + squares @ rewarded.weight)

    _, cache = model.token_logprobs(feats, targets, temperature)
    grads = model.backward(cache, targets, weights, entropy_weights, rewarded)
    rng = np.random.default_rng(0)
    checked = 0
    for name, array in model.params.items():
        if name in STATISTICS:  # kept by ``observe``, not trained
            assert name not in grads
            continue
        touched = np.flatnonzero(grads[name])
        assert touched.size > 0, f"no gradient reaches {name}"
        if name in ("P_case", "Q_case"):
            continue
        picks = np.concatenate([rng.choice(touched, size=min(8, touched.size), replace=False), rng.integers(0, array.size, 4)])
        for index in picks:
            numeric = numeric_gradient(objective, array, index)
            assert numeric == pytest.approx(grads[name].flat[index], rel=1e-5, abs=1e-7), (name, index)
            checked += 1
    assert checked > 50


def test_sampled_logprobs_are_the_models_own_log_likelihood() -> None:
    model = small_model(np.float32)
    prompt = TOK.generation_prompt([{"role": "user", "content": "plane"}])
    rng = np.random.default_rng(3)
    samples = generate(model, prompt, n=6, max_tokens=5, temperature=0.7, rng=rng)
    assert len(samples) == 6
    for sample in samples:
        assert 1 <= len(sample.token_ids) <= 5
        if sample.finish_reason == "stop":
            assert sample.token_ids[-1] == END
        else:
            assert len(sample.token_ids) == 5 and END not in sample.token_ids
        own = model.completion_logprobs(prompt, sample.token_ids, temperature=0.7)
        np.testing.assert_allclose(sample.logprobs, own, atol=1e-4)


def test_a_batch_samples_each_request_as_it_would_be_sampled_alone() -> None:
    """Requests sampled together (different prompts, counts, budgets, stops and constraints)
    get what each would get alone with the same random generator."""
    model = small_model(np.float64)  # float64: batched sums round alike, no draw lands between them
    conversations = ["plane", "You are at 2, the goal is at 5.", "7-9", "abc abc"]
    prompts = [TOK.generation_prompt([{"role": "user", "content": text}]) for text in conversations]
    settings = [
        {"n": 3, "max_tokens": 5},
        {"n": 1, "max_tokens": 2},
        {"n": 4, "max_tokens": 4, "constraint": ChoiceConstraint(["-2", "16", "3"], TOK)},
        {"n": 2, "max_tokens": 7, "stop": ("c",)},
    ]
    for temperature in (1.3, 0.0):
        jobs = [SampleJob(prompt, rng=np.random.default_rng(seed), **kw) for seed, (prompt, kw) in enumerate(zip(prompts, settings))]
        together = generate_batch(model, jobs, temperature=temperature)
        for seed, (prompt, kw) in enumerate(zip(prompts, settings)):
            alone = generate(model, prompt, temperature=temperature, rng=np.random.default_rng(seed), **kw)
            assert [s.token_ids for s in together[seed]] == [s.token_ids for s in alone]
            assert [s.finish_reason for s in together[seed]] == [s.finish_reason for s in alone]
            np.testing.assert_allclose(
                np.concatenate([s.logprobs for s in together[seed]]), np.concatenate([s.logprobs for s in alone]), atol=1e-9
            )
        assert all(len(s.token_ids) <= 2 for s in together[1])
        assert {TOK.decode(s.token_ids[:-1]) for s in together[2]} <= {"-2", "16", "3"}


def test_a_prompt_is_read_once_for_a_model_and_its_copies() -> None:
    """The policy server, exploration and the learner each read the same prompts: the view is
    computed once, shared read-only with the snapshots, and the cache keeps only the latest."""
    model = small_model(np.float32)
    prompt = TOK.generation_prompt([{"role": "user", "content": "plane"}])
    view = model.prompt_view(prompt)
    assert model.copy().prompt_view(tuple(prompt)) is view
    with pytest.raises(ValueError):
        view.window[0] = 7
    cache = ViewCache(size=3)
    limited = PolicyModel(model.params, model.shape, TOK, cache)
    prompts = [TOK.generation_prompt([{"role": "user", "content": word}]) for word in ("a", "bb", "ccc", "dddd")]
    views = [limited.prompt_view(p) for p in prompts]
    assert limited.prompt_view(prompts[-1]) is views[-1]
    assert limited.prompt_view(prompts[0]) is not views[0]  # the oldest was let go
    np.testing.assert_array_equal(limited.prompt_view(prompts[0]).window, views[0].window)


def test_greedy_and_nucleus_sampling() -> None:
    model = small_model(np.float32)
    prompt = TOK.generation_prompt([{"role": "user", "content": "abc"}])
    a = generate(model, prompt, n=3, max_tokens=4, temperature=0.0, rng=np.random.default_rng(1))
    b = generate(model, prompt, n=3, max_tokens=4, temperature=0.0, rng=np.random.default_rng(2))
    assert [s.token_ids for s in a] == [s.token_ids for s in b] and len({tuple(s.token_ids) for s in a}) == 1
    assert all(lp == 0.0 for lp in a[0].logprobs)
    # top_p tiny keeps only the most likely token: same as greedy, logprob 0 after renormalising
    c = generate(model, prompt, n=2, max_tokens=4, temperature=1.0, top_p=1e-6, rng=np.random.default_rng(5))
    assert c[0].token_ids == a[0].token_ids and all(abs(lp) < 1e-6 for lp in c[0].logprobs)


def test_stop_strings_end_generation() -> None:
    model = small_model(np.float32)
    prompt = TOK.generation_prompt([{"role": "user", "content": "abc"}])
    stops = [chr(code) for code in range(48, 127)]  # most characters: nearly every sample stops early
    samples = generate(model, prompt, n=60, max_tokens=8, temperature=2.0, rng=np.random.default_rng(4), stop=stops)
    hit = 0
    for sample in samples:
        text = TOK.decode(sample.token_ids)
        assert not any(ch in text[:-1] for ch in stops), text  # generation stops at the first stop string
        if text and text[-1] in stops:
            hit += 1
            assert sample.finish_reason == "stop"
    assert hit > 0


def test_guided_choice_samples_only_allowed_strings_with_the_masked_logprobs() -> None:
    model = PolicyModel.initialise(TOK, hidden_size=12, seed=2, dtype=np.float32)
    prompt = TOK.generation_prompt([{"role": "user", "content": "7-9"}])
    choices = ["-2", "-12", "16", "3"]
    constraint = ChoiceConstraint(choices, TOK)
    samples = generate(model, prompt, n=80, max_tokens=6, temperature=1.5, rng=np.random.default_rng(8), constraint=constraint)
    texts = {TOK.decode(s.token_ids) for s in samples}
    assert texts <= set(choices) and len(texts) >= 3  # every answer allowed, and still sampled
    for sample in samples:
        assert sample.finish_reason == "stop" and sample.token_ids[-1] == END
        steps = range(len(sample.token_ids))
        masks = np.stack([constraint.allowed(sample.token_ids[:t]) for t in steps])
        feats = model.features([prompt] * len(masks), [sample.token_ids[:t] for t in steps])
        own, _ = model.token_logprobs(feats, np.asarray(sample.token_ids), 1.5, masks)
        np.testing.assert_allclose(sample.logprobs, own, atol=1e-4)
    # a forced token (the end after "3") has probability 1 under the mask, far less without it
    three = next(s for s in samples if TOK.decode(s.token_ids) == "3")
    assert three.logprobs[-1] == pytest.approx(0.0, abs=1e-6)
    assert model.completion_logprobs(prompt, three.token_ids, 1.5)[-1] < -0.01


def test_guided_choice_greedy_picks_the_best_allowed_string() -> None:
    model = small_model(np.float32)
    prompt = TOK.generation_prompt([{"role": "user", "content": "abc"}])
    free = generate(model, prompt, n=1, max_tokens=3, temperature=0.0, rng=np.random.default_rng(0))[0]
    first = TOK.decode(free.token_ids[:1])
    other = "z" if first != "z" else "y"
    constrained = generate(
        model, prompt, n=1, max_tokens=3, temperature=0.0, rng=np.random.default_rng(0), constraint=ChoiceConstraint([other], TOK)
    )[0]
    assert TOK.decode(constrained.token_ids) == other and constrained.token_ids[-1] == END


@pytest.mark.parametrize(
    ("choices", "reason"),
    [
        ([], "non-empty list"),
        ("abc", "non-empty list"),
        (["ok", ""], r"guided_choice\[1\] must be a non-empty string"),
        (["ok", 7], r"guided_choice\[1\] must be a non-empty string"),
        (["caf\u00e9"], "cannot produce"),
        (["x" * 300], "at most 256"),
        ([str(i) for i in range(2000)], "at most 1024"),
        (["y" * 200] * 200, "characters in all"),
    ],
)
def test_bad_guided_choice_is_refused_with_the_reason(choices: object, reason: str) -> None:
    with pytest.raises(ConstraintError, match=reason):
        ChoiceConstraint(choices, TOK)  # type: ignore[arg-type]


def test_logprobs_stay_finite_where_a_probability_underflows() -> None:
    model = small_model(np.float32)
    model.params["b2"][TOK.encode("q")[0]] = 20.0  # about 200 nats above every other token
    prompt = TOK.generation_prompt([{"role": "user", "content": "abc"}])
    feats = model.features([prompt], [[]])
    target = np.asarray(TOK.encode("z"), dtype=np.int64)
    logp, cache = model.token_logprobs(feats, target)
    assert cache.probs[0, target[0]] == 0.0  # float32 cannot hold it
    assert np.isfinite(logp[0]) and -400 < logp[0] < -100  # its logprob is still exact


def test_a_conversation_is_read_from_its_opening_message_beyond_the_window() -> None:
    model = small_model()  # a window of 7 tokens and 6 characters of each message's head
    single = TOK.generation_prompt([{"role": "user", "content": "plum"}])
    assert (model.prompt_view(single).opening == 0).all()  # one message: read once, as the last
    opening = [{"role": "user", "content": "plum tart"}, {"role": "assistant", "content": "OK"}]
    later = TOK.generation_prompt([*opening, {"role": "user", "content": "which fruit was it?"}])
    view = model.prompt_view(later)
    assert TOK.decode(view.opening) == "plum t"
    assert not set(view.window) & set(TOK.encode("plum"))  # the window no longer reaches it
    # the opening's characters are pointer slots, so the policy can copy from them
    feats = model.features([later], [[]])
    s = model.shape
    slots = feats.slots[0, s.window + s.message_slots : s.window + 2 * s.message_slots]
    assert TOK.decode(slots) == "plum t"
    other = TOK.generation_prompt(
        [{"role": "user", "content": "kiwi cake"}, opening[1], {"role": "user", "content": "which fruit was it?"}]
    )
    p, k = TOK.encode("pk")
    first = model.forward(feats).attended[0]
    second = model.forward(model.features([other], [[]])).attended[0]
    assert first[p] > 0 and first[k] == 0 and second[k] > 0 and second[p] == 0


def test_a_long_message_is_read_on_by_the_views_its_prompt_leaves_empty() -> None:
    model = small_model()  # a window of 7 tokens and 6 characters of each message's head
    s = model.shape
    text = "Mon dry, Tue wet, Wed dry. Which day?"
    view = model.prompt_view(TOK.generation_prompt([{"role": "user", "content": text}]))
    assert [TOK.decode(head) for head in (view.message, view.opening, view.earlier)] == ["Mon dr", "y, Tue", " wet, "]
    # a word the join between two views cuts ("dr|y") reads on across it, both ways
    before, after = NEIGHBOUR_OFFSETS.index(1), NEIGHBOUR_OFFSETS.index(-1)
    first_of_second = s.window + s.message_slots
    assert TOK.decode(view.neighbours[first_of_second, before : before + 1]) == "r"
    assert TOK.decode(view.neighbours[first_of_second - 1, after : after + 1]) == "y"
    # in a conversation the opening keeps its own view; the view left empty reads the last message on
    turns = [{"role": "user", "content": "I am Ann."}, {"role": "assistant", "content": "OK"}, {"role": "user", "content": text}]
    view = model.prompt_view(TOK.generation_prompt(turns))
    assert [TOK.decode(head) for head in (view.message, view.opening, view.earlier)] == ["Mon dr", "I am A", "y, Tue"]
    assert TOK.decode(view.neighbours[s.window + 2 * s.message_slots, before : before + 1]) == "r"


def test_a_conversation_is_read_from_the_users_message_before_the_last() -> None:
    model = small_model()
    s = model.shape
    turns = [
        {"role": "user", "content": "My name is Ann."}, {"role": "assistant", "content": "OK"},
        {"role": "user", "content": "I live in Rome."}, {"role": "assistant", "content": "OK"},
        {"role": "user", "content": "Which city do I live in?"},
    ]
    view = model.prompt_view(TOK.generation_prompt(turns))
    assert TOK.decode(view.opening) == "My nam" and TOK.decode(view.earlier) == "I live"
    assert not set(view.window) & set(TOK.encode("IRm"))  # the window no longer reaches it
    feats = model.features([TOK.generation_prompt(turns)], [[]])
    assert TOK.decode(feats.slots[0, s.window + 2 * s.message_slots : s.window + 3 * s.message_slots]) == "I live"
    # with one user message before the last, it is the opening, read once, and the view left
    # empty reads the last message on
    assert TOK.decode(model.prompt_view(TOK.generation_prompt(turns[2:])).earlier) == "city d"
    assert (model.prompt_view(TOK.generation_prompt([{"role": "user", "content": "Ann?"}])).earlier == PAD).all()


def test_a_copy_continues_the_word_it_started_when_letters_recur() -> None:
    from hermes_rl_mcp.trainer.model import GAINS, NEIGHBOUR_OFFSETS

    model = PolicyModel.initialise(TOK, hidden_size=8, seed=3)
    prompt = TOK.generation_prompt([{"role": "user", "content": "fig or horse?"}])
    feats = model.features([prompt], [TOK.encode("ho")])
    window = feats.slots[0, : model.shape.window]
    in_horse, in_or = np.flatnonzero(window == TOK.encode("r")[0])  # slots count back from the end
    before = model.forward(feats).attention[0]
    assert before[in_horse] < 3 * before[in_or]  # 'r' follows an 'o' twice: in "or" and in "horse"
    model.params["P_rel"][len(NEIGHBOUR_OFFSETS)] = 4.0 / GAINS["P_rel"]  # trust the pair "ho"
    after = model.forward(feats).attention[0]
    assert after[in_horse] > 20 * after[in_or]
    # where the pair recurs too, the last three tokens tell the word being copied
    prompt = TOK.generation_prompt([{"role": "user", "content": "longest? balloon"}])
    feats = model.features([prompt], [TOK.encode("balloon")])
    in_longest = np.flatnonzero(feats.slots[0, : model.shape.window] == TOK.encode("g")[0])
    triple = len(NEIGHBOUR_OFFSETS) + 2
    assert feats.follows[0, in_longest, len(NEIGHBOUR_OFFSETS)].all() and not feats.follows[0, in_longest, triple].any()
    assert feats.follows[0, -1, triple] == 1  # the end slot continues "oon"
    before = model.forward(feats).attention[0]
    model.params["P_end"][triple] = 6.0 / GAINS["P_end"]  # trust the triple at the end slot
    after = model.forward(feats).attention[0]
    assert before[-1] < before[in_longest].sum() and after[-1] > 10 * after[in_longest].sum()


def test_the_end_slot_follows_a_copy_that_reached_either_end_of_the_message() -> None:
    from hermes_rl_mcp.trainer.model import NEIGHBOUR_OFFSETS, PAIR_FEATURES

    model = PolicyModel.initialise(TOK, hidden_size=8, seed=3)
    prompt = TOK.generation_prompt([{"role": "user", "content": "plane"}])
    forwards, backwards = NEIGHBOUR_OFFSETS.index(1), NEIGHBOUR_OFFSETS.index(-1)
    pair_forwards, pair_backwards = len(NEIGHBOUR_OFFSETS), len(NEIGHBOUR_OFFSETS) + 1
    triple_forwards, triple_backwards = len(NEIGHBOUR_OFFSETS) + 2, len(NEIGHBOUR_OFFSETS) + 3
    assert PAIR_FEATURES == 4
    end = model.features([prompt] * 4, [TOK.encode(r) for r in ("plane", "enalp", "enal", "pla")]).follows[:, -1]
    assert end[0, [forwards, pair_forwards, triple_forwards]].all() and end[0, backwards] == 0
    assert end[1, [backwards, pair_backwards, triple_backwards]].all() and end[1, forwards] == 0
    # midway, in either direction, the end slot is not next
    assert not end[2:, [forwards, backwards, pair_forwards, pair_backwards, triple_forwards, triple_backwards]].any()
    # and a policy that trusts the backward end stops a finished reversal there, and only there
    feats = model.features([prompt] * 2, [TOK.encode("enalp"), TOK.encode("enal")])
    before = model.forward(feats).attention[:, -1]
    model.params["P_end"][backwards] = 6.0 / GAINS["P_end"]
    after = model.forward(feats).attention[:, -1]
    assert after[0] > 0.9 > 0.3 > before[0]
    assert after[1] == pytest.approx(before[1])


def test_the_pointer_walks_a_phrase_word_by_word() -> None:
    from hermes_rl_mcp.trainer.model import LINK_FEATURES, NEIGHBOUR_OFFSETS, PAIR_FEATURES

    model = PolicyModel.initialise(TOK, hidden_size=8, seed=3)
    walks = len(NEIGHBOUR_OFFSETS) + PAIR_FEATURES  # the first of the LINK_FEATURES columns
    assert LINK_FEATURES == 4
    name = TOK.generation_prompt([{"role": "user", "content": "The initials of Laura Jean Patel? No dots."}])
    joined = TOK.generation_prompt([{"role": "user", "content": "Join with underscores: Big Red Dog"}])
    replies = [(name, "L"), (name, "LJ"), (name, "LJP"), (joined, "big_"), (joined, "big_red_dog"), (joined, "dog_"), (joined, "big")]
    feats = model.features([prompt for prompt, _ in replies], [TOK.encode(reply) for _, reply in replies])

    def hits(row: int, column: int) -> set[str]:
        found = np.flatnonzero(feats.follows[row, :, walks + column])
        return {"END" if slot == len(feats.slots[row]) - 1 else TOK.token_text(int(feats.slots[row, slot])) for slot in found}

    # after an initial, the next word's (and, backwards, the word before's); a phrase stops at
    # "?" and ":", so after its last word's initial, the end slot
    assert hits(0, 0) == {"J"} and hits(0, 1) == {"o"}  # "of Laura": "of" is in the phrase
    assert hits(1, 0) == {"P"} and hits(1, 1) == {"L"}
    assert hits(2, 0) == {"END"} and hits(2, 1) == {"J"}
    # after a word and a link, the word after it in the prompt (whatever the case), or before it
    assert hits(3, 2) == {"R"} and not hits(3, 3)
    assert hits(5, 3) == {"R"} and not hits(5, 2)
    # the reply's last word, with no link after it, is the phrase's last: the end slot
    assert hits(4, 2) == {"END"} and not hits(6, 2)
    assert hits(6, 3) == {"END"}  # "big" is the phrase's first word: a walk backwards ends there
    assert not feats.follows[6, :-1, walks + 2 :].any()  # with no link written, no word is next
    # a policy that trusts the walk writes the initials: the pointer moves to the next word
    one = model.features([name], [TOK.encode("L")])
    j_slots = np.flatnonzero(one.follows[0, :, walks])
    before = model.forward(one).attention[0, j_slots].sum()
    model.params["P_rel"][walks] = 6.0 / GAINS["P_rel"]
    after = model.forward(one).attention[0, j_slots].sum()
    assert before < 0.1 and after > 0.5


def test_the_inputs_say_which_characters_of_the_prompt_recur() -> None:
    model = PolicyModel.initialise(TOK, hidden_size=8, seed=3)

    def inputs(letter: str) -> np.ndarray:
        prompt = TOK.generation_prompt([{"role": "user", "content": f"Does plome hold {letter}?"}])
        return model.features([prompt], [[]]).repeats[0]

    has, lacks = inputs("m"), inputs("k")
    differ = np.flatnonzero(has != lacks)
    assert differ.size == 1 and has[differ[0]] == 1.0  # the one pair: "m" and the "m" of plome


def test_the_inputs_say_whether_neighbouring_characters_go_up_or_down() -> None:
    model = PolicyModel.initialise(TOK, hidden_size=8, seed=3)
    s = model.shape
    start = s.window + HEADS * s.message_slots  # after the digit values

    def rises(text: str) -> tuple[list[float], list[float]]:
        prompt = TOK.generation_prompt([{"role": "user", "content": text}])
        dense = model.features([prompt], [[]]).prompt_dense[0]
        window = dense[start : start + s.window - 1]
        message = dense[start + s.window - 1 : start + s.window - 1 + s.message_slots - 1]
        return window.tolist(), message.tolist()

    window, message = rises("bdk 91 a1")
    assert message[:9] == [1, 1, 0, 0, -1, 0, 0, 0, 0]  # b<d, d<k, then 9>1; a letter and a digit do not compare
    assert [x for x in window if x][::-1] == [1, 1, -1]  # the window reads the same pairs from the end
    assert rises("kdb")[1][:3] == [-1, -1, 0]


def test_the_inputs_say_which_of_every_two_numbers_is_larger() -> None:
    model = PolicyModel.initialise(TOK, hidden_size=8, seed=3)
    s = model.shape
    start = s.window + HEADS * s.message_slots + s.neighbour_pairs  # after the digit values and the rises

    def comparisons(*messages: str) -> tuple[list[float], list[float]]:
        roles = ["user", "assistant"]
        prompt = TOK.generation_prompt([{"role": roles[i % 2], "content": m} for i, m in enumerate(messages)])
        dense = model.features([prompt], [[]]).prompt_dense[0][start : start + COMPARISONS]
        half = COMPARISONS // 2
        return dense[:half].tolist(), dense[half:].tolist()

    # pairs (1st, 2nd), (1st, 3rd), (1st, 4th), (2nd, 3rd), (2nd, 4th), (3rd, 4th)
    assert comparisons("Is 7 more than 1250, or 93?")[0] == [1, 1, 0, -1, 0, 0]  # by value, not by digits or length
    assert comparisons("Which is largest: 412, 87, 305?")[0] == [-1, -1, 0, 1, 0, 0]  # the first, from every pair
    assert comparisons("Only 40 here.") == ([0] * 6, [0] * 6)
    # in a conversation, the opening message's numbers are compared too
    assert comparisons("Walk from 5 to 2.", "L", "Now at 4; goal 2.") == ([-1, 0, 0, 0, 0, 0], [-1, 0, 0, 0, 0, 0])
    assert comparisons("Walk from 5 to 2.", "L", "Now at 1; goal 2.") == ([1, 0, 0, 0, 0, 0], [-1, 0, 0, 0, 0, 0])


def test_the_inputs_hold_the_sign_of_each_number() -> None:
    model = PolicyModel.initialise(TOK, hidden_size=8, seed=3)
    s = model.shape
    start = s.window + HEADS * s.message_slots + s.neighbour_pairs + COMPARISONS  # after the comparisons

    def signs(text: str) -> list[float]:
        prompt = TOK.generation_prompt([{"role": "user", "content": text}])
        return model.features([prompt], [[]]).prompt_dense[0][start : start + SIGNS].tolist()

    assert signs("Which quadrant is (-3, 41) in?") == [-1, 1, 0, 0, 0, 0, 0, 0]
    assert signs("From 1961-1994, or 7 - 2?") == [1, 1, 1, 1, 0, 0, 0, 0]  # hyphens and a minus apart
    assert signs("No numbers.") == [0] * SIGNS


def test_a_numbers_size_reaches_the_hidden_layer_the_same_wherever_the_number_stands() -> None:
    model = PolicyModel.initialise(TOK, hidden_size=8, seed=3)
    eighteen = int(np.searchsorted(NUMBER_LEVELS, 18.0))
    model.params["U_level"][0, eighteen] = np.arange(8.0)  # the first number's level 18

    def level_inputs(text: str) -> list[float]:
        prompt = TOK.generation_prompt([{"role": "user", "content": text}])
        return model._level_inputs(model.features([prompt], [[]])).ravel().tolist()

    # whatever the name before it, and so whichever slots its digits fall in, a number of 18 or
    # more gets the level's row, and one below it does not
    assert level_inputs("Jo is 18. Child, teen or adult?") == level_inputs("Bartholomew is 41. Child, teen or adult?") == list(np.arange(8.0))
    assert level_inputs("Bartholomew is 17. Child, teen or adult?") == [0.0] * 8
    assert level_inputs("Jo is -18.5 today") == list(np.arange(8.0))  # the magnitude: the sign is its own input
    # the batch's largest number reaches 70 levels of the first slot: they share LEVELS_STEP levels' step
    prompts = [TOK.generation_prompt([{"role": "user", "content": t}]) for t in ("Jo is 70", "Al is 3 and 500")]
    scales = model.step_scales(model.features(prompts, [[], []]))["U_level"].ravel()
    assert scales[0] == pytest.approx(LEVELS_STEP / 70) and scales[1] == pytest.approx(LEVELS_STEP / int(np.searchsorted(NUMBER_LEVELS, 500.0, side="right")))
    assert scales[2] == 1.0  # no number there


def test_a_numbers_span_of_values_moves_the_next_token_for_the_numbers_in_it_alone() -> None:
    model = PolicyModel.initialise(TOK, hidden_size=8, seed=3)
    medium = TOK.encode("m")[0]

    def logprob_of_medium(text: str) -> float:
        prompt = TOK.generation_prompt([{"role": "user", "content": text}])
        return float(np.log(model.forward(model.features([prompt], [[]])).probs[0, medium]))

    texts = ("My hens laid one of 61.4 g. Small, medium or large?", "What size is a 61 g egg?", "What size is a 62 g egg?")
    before = [logprob_of_medium(t) for t in texts]
    model.params["L_span"][:, medium] = 0.0
    model.params["L_span"][SPAN_OFFSETS[0] + 61, medium] = 0.3  # the first number's one-integer span of 61
    after = [logprob_of_medium(t) for t in texts]
    # 61 and 61.4 lie in the span, wherever the number stands and whatever its decimals; 62 does not
    assert after[0] - before[0] > 2.0 and after[1] - before[1] > 2.0
    assert after[2] == pytest.approx(before[2], abs=1e-6)
    # a batch of no prompt (an exploration that picked nothing) is scored as nothing, not an error
    assert model.token_logprobs(model.features([], []), np.zeros(0, dtype=np.int64), 1.0)[0].shape == (0,)


def test_the_pointer_reads_a_words_neighbours_and_whether_the_last_message_names_them() -> None:
    from hermes_rl_mcp.trainer.model import NEAR_OFFSETS

    model = PolicyModel.initialise(TOK, hidden_size=8, seed=3)
    s = model.shape
    opening, earlier = s.window + s.message_slots, s.window + 2 * s.message_slots  # the views' first slots
    column = {offset: k for k, offset in enumerate(NEAR_OFFSETS)}
    # at a word's first character, each neighbour's word, by its offset
    text = "9am free, 10:30am busy, 2pm free."
    view = model.prompt_view(TOK.generation_prompt([{"role": "user", "content": text}]))
    at = {word: s.window + text.index(word) for word in ("9am", "free", "10:30am", "busy", "2pm")}
    assert view.near_keys[at["9am"], column[1]] == view.near_keys[at["2pm"], column[1]] == column[1] * s.word_rows + view.word_keys[at["free"]]
    assert view.near_keys[at["10:30am"], column[2]] == column[2] * s.word_rows + view.word_keys[at["busy"]]  # "10", "30am", "busy"
    assert view.near_keys[at["9am"], column[-1]] == -1 and view.near_keys[at["9am"] + 1, column[1]] == -1  # none before; not a word's start
    # the value told beside the key the last message asks about is marked, whichever message told it
    conversation = [
        {"role": "user", "content": "I'm seeing Ana on Tuesday. Reply OK."}, {"role": "assistant", "content": "OK"},
        {"role": "user", "content": "I'm also seeing Ben on Friday. Reply OK."}, {"role": "assistant", "content": "OK"},
        {"role": "user", "content": "Which day am I seeing Ana?"},
    ]
    view = model.prompt_view(TOK.generation_prompt(conversation))
    asked = view.marked[:, 8 + column[-2]]
    assert asked[opening + conversation[0]["content"].index("Tuesday")] == 1.0  # "Ana on Tuesday"
    assert asked[earlier + conversation[2]["content"].index("Friday")] == 0.0  # "Ben on Friday"
    # three words on, and weighed by how often the question repeats the neighbour: the key it
    # names once counts whole, a word every record repeats a third
    text = "Nina ordered the soup, Omar ordered the salad and Jo ordered the pasta. Who ordered the salad?"
    view = model.prompt_view(TOK.generation_prompt([{"role": "user", "content": text}]))
    marks = {name: view.marked[s.window + text.index(name), 8:] for name in ("Nina", "Omar", "Jo")}
    assert marks["Omar"][column[3]] == 1.0 and marks["Nina"][column[3]] == marks["Jo"][column[3]] == 0.0
    assert marks["Nina"][column[1]] == pytest.approx(1 / 3)  # "ordered": said three more times


def test_the_pointer_knows_which_words_of_the_prompt_the_reply_has_written_whole() -> None:
    model = PolicyModel.initialise(TOK, hidden_size=8, seed=3)
    s = model.shape
    text = "Sort: pear, apple, plum"
    prompt = TOK.generation_prompt([{"role": "user", "content": text}])
    at = {word: s.window + text.index(word) for word in ("pear", "apple", "plum")}
    replies = [TOK.encode(r) for r in ("apple, ", "apple", "apple, pl")]
    feats = model.features([prompt] * 3, replies)
    by_sampling = model.features_for_rows(model.prompt_features([model.prompt_view(prompt)]), np.zeros(1, dtype=np.int64), np.asarray([replies[0]]))
    # written whole: "apple" is covered, "pear" is not, though its letters p, e and a were written
    assert feats.word_used[0, at["apple"]] == 1.0 and feats.word_used[0, at["pear"]] == 0.0 and feats.used[0, at["pear"]] == 1.0
    assert by_sampling.word_used[0, at["apple"]] == 1.0
    assert feats.word_used[1].sum() == 0.0  # still being written: not yet whole
    assert (feats.word_used[2] == feats.word_used[0]).all()  # "pl" is not "plum"


def test_the_inputs_say_which_words_of_the_last_message_earlier_messages_spoke_of() -> None:
    model = PolicyModel.initialise(TOK, hidden_size=8, seed=3)
    words = model.shape.bag_words

    def shared(*messages: str) -> tuple[list[float], list[float]]:
        roles = ["user", "assistant"]
        view = model.prompt_view(TOK.generation_prompt([{"role": roles[i % 2], "content": m} for i, m in enumerate(messages)]))
        return view.shared[:7].tolist(), view.shared[words : words + 7].tolist()

    opening, moved = "I left my phone in the kitchen.", "Later I moved my {} to the garage."
    # Which(1) room(2) is(3) my(4) phone(5) in(6) now(7): "phone" is in the opening; in the
    # message before the last only when that message moved it
    asked = "Which room is my phone in now?"
    assert shared(opening, "OK", moved.format("phone"), "OK", asked) == ([0, 0, 0, 1, 1, 1, 0], [0, 0, 0, 1, 1, 0, 0])
    assert shared(opening, "OK", moved.format("wallet"), "OK", asked) == ([0, 0, 0, 1, 1, 1, 0], [0, 0, 0, 1, 0, 0, 0])
    assert shared(asked) == ([0] * 7, [0] * 7)  # one message: nothing before it


def test_the_pointer_marks_words_another_user_message_spoke_of() -> None:
    model = PolicyModel.initialise(TOK, hidden_size=8, seed=3)
    s = model.shape
    conversation = [
        {"role": "user", "content": "I bought milk and eggs. Reply OK."}, {"role": "assistant", "content": "OK bread"},
        {"role": "user", "content": "Then cheese. Reply OK."}, {"role": "assistant", "content": "OK"},
        {"role": "user", "content": "My list: bread, milk, cheese, eggs, jam. What is still to buy?"},
    ]
    feats = model.features([TOK.generation_prompt(conversation)], [[]])
    message = feats.slots[0, s.window : s.window + s.message_slots]
    marks = feats.marked[0, s.window : s.window + s.message_slots, -1]
    # a word a user said in any earlier message, whichever view reads that message; not the
    # assistant's words ("bread"), the policy's own samples
    assert TOK.decode(message[marks > 0].tolist()) == "mce"
    one = [{"role": "user", "content": conversation[-1]["content"]}]
    assert not model.features([TOK.generation_prompt(one)], [[]]).marked[0, :, -1].any()  # one message: nothing before it


def test_the_pointer_knows_which_letter_of_a_word_comes_next_in_order() -> None:
    model = PolicyModel.initialise(TOK, hidden_size=8, seed=3)
    prompt = TOK.generation_prompt([{"role": "user", "content": "go dbca"}])

    def marked(written: str) -> tuple[str, str]:
        feats = model.features([prompt], [TOK.encode(written)])
        window = feats.slots[0, : model.shape.window]
        order = feats.order[0, : model.shape.window]
        first = "".join(sorted(TOK.decode([t]) for t in window[order[:, 0] == 1]))
        last = "".join(sorted(TOK.decode([t]) for t in window[order[:, 1] == 1]))
        return first, last  # per word: its first and its last unwritten letter in code order

    assert marked("") == ("ag", "do")
    assert marked("a") == ("bg", "do")  # "a" is written: "b" comes first among what is left
    assert marked("abcd") == ("g", "o")  # a word wholly written has no slot marked
    assert marked("gabc") == ("do", "do")  # g is written: "o" is both first and last of "go"
    feats = model.features([prompt], [[]])
    before = model.forward(feats).attention[0]
    model.params["P_order"][0] = 3.0 / GAINS["P_order"]
    after = model.forward(feats).attention[0]
    smallest = np.flatnonzero(feats.order[0, :, 0])
    assert after[smallest].sum() > 3 * before[smallest].sum()  # the weight moves the pointer onto them


def test_lists_are_found_where_three_or_more_words_share_a_comma_separator() -> None:
    model = PolicyModel.initialise(TOK, hidden_size=8, seed=3)

    def lists(text: str) -> list[tuple[list[str], str, list[int]]]:
        tokens = TOK.encode(text)
        return [([TOK.decode(tokens[a:b]) for a, b in f.items], TOK.decode(list(f.join)), f.ranks(tokens, TOK)) for f in model.lists(tokens)]

    # words alphabetically whatever their case, numbers by value (not as text: 12 after 5)
    assert lists("Sort: pear, Apple, kiwi") == [(["pear", "Apple", "kiwi"], ", ", [2, 0, 1])]
    assert lists("Sort 5,12,3,12 now") == [(["5", "12", "3", "12"], ",", [1, 2, 0, 3])]  # equal items in reading order
    assert lists("Mixed: 10, b2, 9") == [(["10", "b2", "9"], ", ", [0, 2, 1])]  # not all numbers: as text
    # two items, another separator, or items of several words are no list
    assert lists("Ann is 34, Bob is 12, Cy is 50.") == []
    assert lists("figs, kiwis") == [] and lists("fig and kiwi and plum") == []
    # a change of separator ends a list; each message of a run of lists is found
    assert lists("a, b, c; d, e, f") == [(["a", "b", "c"], ", ", [0, 1, 2]), (["d", "e", "f"], ", ", [0, 1, 2])]
    # as people write them: the last item after "and" or "or", with or without a comma before it
    assert lists("Order Mars, Venus and Earth.") == [(["Mars", "Venus", "Earth"], ", ", [1, 2, 0])]
    assert lists("Tea, milk, or juice?") == [(["Tea", "milk", "juice"], ", ", [2, 1, 0])]
    assert lists("9, 4, 7 and 1") == [(["9", "4", "7", "1"], ", ", [3, 1, 2, 0])]
    assert lists("Mars and Venus") == [] and lists("Mars, Venus andEarth") == [] and lists("Mars, Venus and") == []


def test_the_pointer_knows_which_list_item_comes_next_in_order() -> None:
    model = PolicyModel.initialise(TOK, hidden_size=8, seed=3)
    prompt = TOK.generation_prompt([{"role": "user", "content": "Sort: 40, 5, 123"}])

    def marked(written: str) -> tuple[str, str]:
        feats = model.features([prompt], [TOK.encode(written)])
        message = feats.slots[0, model.shape.window : model.shape.window + model.shape.message_slots]
        order = feats.order[0, model.shape.window : model.shape.window + model.shape.message_slots]
        first = TOK.decode(message[order[:, 2] == 1].tolist())
        last = TOK.decode(message[order[:, 3] == 1].tolist())
        return first, last  # the next character of the next item, in order from the first and from the last

    assert marked("") == ("5", "1")  # 5 is the smallest, 123 the largest
    # an item counts as written once a comma follows it; until then the mark is on the item's
    # character after as many as the turn's last word holds, where that word begins the item:
    # "5" has no second character, and "123" does not begin with "5"
    assert marked("5") == ("", "")
    assert marked("5, ") == ("4", "4")
    assert marked("5, 4") == ("0", "0")
    assert marked("5, 40, ") == ("1", "5")
    assert marked("5, 40, 12") == ("3", "")
    assert marked("5, 40, 123, ") == ("", "")  # past the list's end, no item is marked
    # after the last item in order, the end slot takes the mark: once the turn holds as many
    # commas as the last place and its last word is as long as the item there
    ends = model.features([prompt] * 5, [TOK.encode(w) for w in ("5, 40, 123", "5, 40, 12", "5, 40", "123, 40, 5", "")]).order[:, -1]
    assert ends[:, 2].tolist() == [1, 0, 0, 0, 0] and ends[:, 3].tolist() == [0, 0, 0, 1, 0]
    # two items that start alike: once "6" is written after "20, ", the mark is on 61's "1",
    # where a mark on the next item's first character alone fell on both "6"s
    close = TOK.generation_prompt([{"role": "user", "content": "Sort: 64, 20, 61"}])
    feats = model.features([close], [TOK.encode("20, 6")])
    message = feats.slots[0, model.shape.window : model.shape.window + model.shape.message_slots]
    assert TOK.decode(message[feats.order[0, model.shape.window : model.shape.window + model.shape.message_slots, 2] == 1].tolist()) == "1"
    by_length = TOK.generation_prompt([{"role": "user", "content": "Shortest first: kiwi, fig, banana, pear"}])
    feats = model.features([by_length] * 3, [TOK.encode(w) for w in ("", "fig, ", "fig, kiwi, ")])
    message = feats.slots[:, model.shape.window : model.shape.window + model.shape.message_slots]
    order = feats.order[:, model.shape.window : model.shape.window + model.shape.message_slots]
    # by length, from the shortest and from the longest; kiwi and pear tie, and go in reading order
    assert [TOK.decode(message[row][order[row, :, 4] == 1].tolist()) for row in range(3)] == ["f", "k", "p"]
    assert [TOK.decode(message[row][order[row, :, 5] == 1].tolist()) for row in range(3)] == ["b", "p", "k"]
    feats = model.features([prompt, prompt], [TOK.encode(""), TOK.encode("5, ")])
    before = model.forward(feats).attention
    model.params["P_order"][2] = 3.0 / GAINS["P_order"]
    after = model.forward(feats).attention
    for row in range(2):  # the weight moves the pointer onto the next item, as the reply goes on
        nextone = np.flatnonzero(feats.order[row, :, 2])
        assert after[row, nextone].sum() > 3 * before[row, nextone].sum()

def test_the_pointer_ranks_words_by_the_numbers_said_with_them() -> None:
    from hermes_rl_mcp.trainer.model import BOUND_OFFSETS

    model = PolicyModel.initialise(TOK, hidden_size=8, seed=3)
    s = model.shape

    def marked(text: str, written: str, offset: int) -> tuple[str, str]:
        """The first characters of the words ``offset`` words from the number next in order,
        from the smallest and from the largest."""
        feats = model.features([TOK.generation_prompt([{"role": "user", "content": text}])], [TOK.encode(written)])
        message = feats.slots[0, s.window : s.window + s.message_slots]
        column = 6 + 2 * BOUND_OFFSETS.index(offset)  # after the order within a word and a list's two
        order = feats.order[0, s.window : s.window + s.message_slots]
        return tuple(TOK.decode(message[order[:, column + k] == 1].tolist()) for k in range(2))

    people = "Ann is 34, Bob is 12 and Cleo is 50. Who is the youngest?"
    assert marked(people, "", -2) == ("B", "C")  # Bob is the youngest, Cleo the oldest
    heights = "Heights: Greta 165 cm, Bob 170 cm, Al 150 cm. List them."
    assert marked(heights, "", -1) == ("A", "B")
    assert marked(heights, "Al, ", -1) == ("G", "G")  # one name written: the next in order
    assert marked(heights, "Al, Gr", -1) == ("e", "e")  # and where the turn has reached in it
    assert marked(heights, "", 1) == ("c", "c")  # the "cm" after 150, and after 170: which offset names is learned
    assert marked("3 apples, 5 pears and 2 kiwis", "", 1) == ("k", "p")
    assert marked("Ann is 34. Who?", "", -2) == ("", "")  # one number: nothing to rank
    # numbers with a fraction are ranked by their whole value, not by the digits either side of the point
    race = "Race: Mia 12.4 s, Leo 11.9 s and Zoe 12.1 s. Who won?"
    assert marked(race, "", -1) == ("L", "M") and marked(race, "", 1) == ("s", "s")


def test_the_pointer_marks_list_items_and_words_that_occur_twice() -> None:
    from hermes_rl_mcp.trainer.model import GAINS

    model = PolicyModel.initialise(TOK, hidden_size=8, seed=3)
    s = model.shape

    def marked(text: str) -> tuple[str, str]:
        """The characters of the message view marked as starting a repeated list item, and a
        word the message holds more than once."""
        feats = model.features([TOK.generation_prompt([{"role": "user", "content": text}])], [[]])
        message = feats.slots[0, s.window : s.window + s.message_slots]
        marks = feats.marked[0, s.window : s.window + s.message_slots]
        return tuple(TOK.decode(message[marks[:, k] > 0].tolist()) for k in (2, 3))

    assert marked("Listed: Ann, Bob, Cleo, Bob. Who twice?") == ("BB", "BB")
    assert marked("the cat saw the dog") == ("", "tt")  # no list, a word said twice
    assert marked("Listed: Ann, Bob, Cleo. The cat?") == ("", "")  # "Cleo" and "cat" share no word
    assert marked("Names: bob, Bob, ann") == ("", "")  # case tells words apart
    # the first message's words are not the last message's: a repeat is within one message
    conversation = [{"role": "user", "content": "red"}, {"role": "assistant", "content": "ok"}, {"role": "user", "content": "red blue"}]
    feats = model.features([TOK.generation_prompt(conversation)], [[]])
    assert not feats.marked[0, :, 3].any()

    prompt = TOK.generation_prompt([{"role": "user", "content": "Listed: Ann, Bob, Cleo, Bob. Who twice?"}])
    feats = model.features([prompt], [[]])
    twice = np.flatnonzero(feats.marked[0, :, 2])
    before = model.forward(feats).attention[0, twice].sum()
    model.params["P_mark"][2] = 3.0 / GAINS["P_mark"]
    assert model.forward(feats).attention[0, twice].sum() > 5 * before  # one weight reads "the one listed twice"



def test_the_pointer_reads_how_often_its_message_holds_the_word_it_finds() -> None:
    from hermes_rl_mcp.trainer.model import GAINS

    model = PolicyModel.initialise(TOK, hidden_size=8, seed=3, dtype=np.float64)
    s = model.shape
    text = "a red sock, a blue mug, a red pen and a red hat. How many red things?"
    prompt = TOK.generation_prompt([{"role": "user", "content": text}])
    feats = model.features([prompt], [[]])
    message = feats.slots[0, s.window : s.window + s.message_slots]
    counts = feats.word_counts[0, s.window : s.window + s.message_slots]
    # at each word's first character, how many times the message says the word
    assert {TOK.decode([message[k]]): int(counts[k]) for k in np.flatnonzero(counts)} == {
        "a": 4, "r": 4, "s": 1, "b": 1, "m": 1, "p": 1, "h": 1, "H": 1, "t": 1,  # "red" 4 times; "many" and "mug" once each
    }
    # one row of C_word, found through the pointer: "the word the pointer is on, said 4 times, answers 3"
    three = TOK.encode("3")[0]
    before = model.forward(feats).probs[0, three]
    model.params["C_word"][4, three] = 8.0 / GAINS["C_word"]
    reds = np.flatnonzero((feats.slots[0] == TOK.encode("r")[0]) & (feats.word_counts[0] == 4))
    model.params["P_key"][TOK.encode("r")[0]] = 4.0 / GAINS["P_key"]
    after = model.forward(feats)
    assert after.attention[0, reds].sum() > 0.5 and after.probs[0, three] > 20 * before


def test_the_pointer_marks_words_that_end_or_begin_like_another() -> None:
    from hermes_rl_mcp.trainer.model import GAINS

    model = PolicyModel.initialise(TOK, hidden_size=8, seed=3)
    s = model.shape

    def marked(text: str) -> tuple[str, ...]:
        """The first characters of the message view's words marked for sharing their last two,
        last three, first two and first three characters with another word of the message."""
        feats = model.features([TOK.generation_prompt([{"role": "user", "content": text}])], [[]])
        message = feats.slots[0, s.window : s.window + s.message_slots]
        marks = feats.marked[0, s.window : s.window + s.message_slots]
        return tuple(TOK.decode(message[marks[:, k] > 0].tolist()) for k in range(4, 8))

    assert marked("Which rhymes with light: pound, flat, tight?") == ("lt", "lt", "", "")
    assert marked("prefix or preset, not pr") == ("", "", "ppp", "pp")  # "pr" is too short for three
    assert marked("the cat saw the dog") == ("", "", "", "")  # the same word twice is not another word
    # the first message's words are not the last message's: a shared ending is within one message
    conversation = [{"role": "user", "content": "light"}, {"role": "assistant", "content": "ok"}, {"role": "user", "content": "tight"}]
    assert not model.features([TOK.generation_prompt(conversation)], [[]]).marked[0, :, 4:].any()

    prompt = TOK.generation_prompt([{"role": "user", "content": "Which rhymes with light: pound, flat, tight?"}])
    feats = model.features([prompt], [[]])
    rhymes = np.flatnonzero(feats.marked[0, :, 5])
    before = model.forward(feats).attention[0, rhymes].sum()
    model.params["P_mark"][5] = 3.0 / GAINS["P_mark"]
    assert model.forward(feats).attention[0, rhymes].sum() > 5 * before  # one weight reads "the word that rhymes"


def test_the_prompts_numbers_are_read_with_their_places_and_neighbours() -> None:
    model = PolicyModel.initialise(TOK, hidden_size=8, seed=4)

    def read(text: str) -> tuple[np.ndarray, np.ndarray, int]:
        return read_numbers(np.asarray(TOK.encode(text)), model._is_digit, model._zero, model._minus, model._is_word_char, model._point)

    values, context, count = read("Add 12, 7 and 3004005.")
    assert count == 3 and values.tolist() == [12.0, 7.0, 300400.0, 0.0]  # a long run is read as its first six digits
    assert [TOK.decode(context[k, 1:]) for k in range(3)] == [" ,", "  ", " ."]
    values, context, count = read("7-9")
    assert count == 2 and context[:2, 1].tolist() == [PAD, TOK.encode("-")[0]] and context[:2, 2].tolist() == [TOK.encode("-")[0], PAD]
    # a minus sign makes a number negative; a hyphen after a number or a word, or a minus
    # standing apart, does not
    assert values[:2].tolist() == [7.0, 9.0]
    assert read("Is (3, -5) or (-12, 4) further?")[0].tolist() == [3.0, -5.0, -12.0, 4.0]
    assert read("-8 degrees, 7 - 2, pages 3-4, x-1")[0].tolist() == [-8.0, 7.0, 2.0, 3.0]
    assert read("x-1 and -1")[0][:2].tolist() == [1.0, -1.0]
    # a code's digits are not values; a number with its unit is
    assert read("Codes k4p9z2, 6761s94, B12 and 5pw88 at 10am on the 3rd")[0].tolist() == [10.0, 3.0, 0.0, 0.0]
    # a decimal point between digits makes one number with a fraction; a full stop does not
    assert read("Mia 12.4 s, Leo 11.95 s. I ran 3.")[0].tolist() == pytest.approx([12.4, 11.95, 3.0, 0.0])
    values, _, count = read("Version 1.2.3")  # a second point ends the number
    assert count == 2 and values.tolist() == pytest.approx([1.2, 3.0, 0.0, 0.0])
    # in a conversation the opening message's numbers follow, in places of their own
    view = model.prompt_view(TOK.generation_prompt([
        {"role": "user", "content": "Start with 6."}, {"role": "assistant", "content": "OK"}, {"role": "user", "content": "Add 3."},
    ]))
    assert view.number_count == 1 and view.numbers.tolist() == [3, 0, 0, 0, 6, 0, 0, 0] and view.number_context[4, 0] == 4


def test_the_number_path_writes_a_signed_sum_of_numbers_it_never_saw() -> None:
    model = PolicyModel.initialise(TOK, hidden_size=8, seed=4, dtype=np.float64)
    p = model.params
    # value = first number + (the next one, signed by the operator before it)
    p["N_before"][PAD] = 1.0 / GAINS["N_before"]
    p["N_before"][TOK.encode("+")[0]] = 1.0 / GAINS["N_before"]
    p["N_before"][TOK.encode("-")[0]] = -1.0 / GAINS["N_before"]
    p["N_spread"][:] = np.log(0.3) / GAINS["N_spread"]
    p["N_mix"][:] = np.log(0.999 / 0.001) / GAINS["N_mix"]

    def reply(text: str) -> str:
        prompt = TOK.generation_prompt([{"role": "user", "content": text}])
        return TOK.decode(generate(model, prompt, n=1, max_tokens=6, temperature=0.0, rng=np.random.default_rng(0))[0].token_ids)

    assert [reply(q) for q in ("7+8", "3-9", "120+345", "0-0")] == ["15", "-6", "465", "0"]
    # a mask that allows no number leaves the path out, and the masked choice is still sampled
    prompt = TOK.generation_prompt([{"role": "user", "content": "Is 4 or 7 bigger? first or second"}])
    constraint = ChoiceConstraint(["first", "second"], TOK)
    samples = generate(model, prompt, n=20, max_tokens=8, temperature=1.0, rng=np.random.default_rng(1), constraint=constraint)
    assert {TOK.decode(s.token_ids) for s in samples} <= {"first", "second"}


def test_the_number_path_weighs_a_number_by_the_word_after_it() -> None:
    model = PolicyModel.initialise(TOK, hidden_size=8, seed=4, dtype=np.float64)
    p = model.params

    def words_after(text: str) -> list[int]:
        view = model.prompt_view(TOK.generation_prompt([{"role": "user", "content": text}]))
        return view.number_context[: view.number_count, 3].tolist()

    cows, spiders = words_after("There are 2 cows and 3 spiders.")
    none = model.shape.word_rows
    assert cows != spiders and none not in (cows, spiders)
    assert words_after("2 spiders, 9 cows") == [spiders, cows]  # the word, wherever the number stands
    assert words_after("cows: 5. Then 7, 8; and 3cows") == [none] * 4  # no word right after those numbers
    # legs per animal, one weight per unit word: totals for counts never seen together
    p["N_word"][cows] = 4.0 / GAINS["N_word"]
    p["N_word"][spiders] = 8.0 / GAINS["N_word"]
    p["N_spread"][:] = np.log(0.3) / GAINS["N_spread"]
    p["N_mix"][:] = np.log(0.999 / 0.001) / GAINS["N_mix"]
    for text, legs in (("There are 7 cows and 2 spiders.", "44"), ("2 spiders, 9 cows", "52")):
        prompt = TOK.generation_prompt([{"role": "user", "content": text}])
        reply = generate(model, prompt, n=1, max_tokens=6, temperature=0.0, rng=np.random.default_rng(0))[0]
        assert TOK.decode(reply.token_ids) == legs


def test_the_number_path_reads_differences_of_neighbouring_numbers() -> None:
    model = PolicyModel.initialise(TOK, hidden_size=8, seed=4, dtype=np.float64)
    model.params["N_diff"][0] = 1.0 / GAINS["N_diff"]  # value = the second number minus the first
    model.params["N_spread"][:] = np.log(0.3) / GAINS["N_spread"]
    model.params["N_mix"][:] = np.log(0.999 / 0.001) / GAINS["N_mix"]
    for text, years in (("How many years from 1961 to 1994?", "33"), ("From 1900 to 1905?", "5"), ("2000 then 1990", "-10")):
        prompt = TOK.generation_prompt([{"role": "user", "content": text}])
        reply = generate(model, prompt, n=1, max_tokens=6, temperature=0.0, rng=np.random.default_rng(0))[0]
        assert TOK.decode(reply.token_ids) == years
    # one number: no difference, so nothing from that weight
    feats = model.features([TOK.generation_prompt([{"role": "user", "content": "after 38"}])], [[]])
    assert not feats.number_diffs.any()


def test_the_number_path_counts_characters_against_the_prompts_trained_on() -> None:
    model = PolicyModel.initialise(TOK, hidden_size=8, seed=4, dtype=np.float64)
    p = model.params

    def asked(word: str) -> list[int]:
        return TOK.generation_prompt([{"role": "user", "content": f"How many vowels are in {word}?"}])

    seen = model.features([asked(w) for w in ("abc", "eeee", "xyz", "oak")], [[]] * 4)
    model.observe(seen)
    a, question = TOK.encode("a")[0], TOK.encode("?")[0]
    # the mean count of each character over those prompts: "a" twice in the question, and in two words
    assert p["N_tally_mean"][a] == pytest.approx(2.5) and p["N_tally_mean"][question] == 1.0
    # a character that occurs as often in every prompt says nothing a bias does not: no step
    scales = model.step_scales(seen)
    assert scales["N_tally"][question] == 0.0 and scales["N_tally"][a] == 1.0
    # value = mean vowels of the words seen + each vowel counted against its mean: the count
    for vowel in "aeiou":
        p["N_tally"][TOK.encode(vowel)[0]] = 1.0 / GAINS["N_tally"]
    p["N_bias"][0] = 1.75 / (GAINS["N_bias"] * BIAS_INPUT)
    p["N_spread"][:] = np.log(0.3) / GAINS["N_spread"]
    p["N_mix"][:] = np.log(0.999 / 0.001) / GAINS["N_mix"]
    for word, count in (("queue", "4"), ("rhythm", "0"), ("banana", "3")):
        reply = generate(model, asked(word), n=1, max_tokens=4, temperature=0.0, rng=np.random.default_rng(0))[0]
        assert TOK.decode(reply.token_ids) == count
    # digits are read as values, not counted: a weight per digit would be a table per value
    after = model.features([TOK.generation_prompt([{"role": "user", "content": "What comes after 38?"}])], [[]])
    assert not after.tally[0, TOK.encode("0123456789")].any() and after.tally[0, TOK.encode("t")[0]] == 2
    # the prompts a run trains on later move the mean, weighted by how many there were (a prompt
    # counts once per batch, however many of its samples the batch holds)
    model.observe(model.features([asked("aaaa")] * 3 + [asked("bbb")], [[]] * 4))
    assert p["N_tally_mean"][a] == pytest.approx((4 * 2.5 + 6 + 2) / 6)


def test_the_number_path_counts_words_against_the_prompts_trained_on() -> None:
    model = PolicyModel.initialise(TOK, hidden_size=8, seed=4, dtype=np.float64)
    p = model.params

    def asked(words: str) -> list[int]:
        return TOK.generation_prompt([{"role": "user", "content": f"How many are animals: {words}?"}])

    def row(word: str) -> int:  # the word's column in the tally: after the characters'
        view = model.prompt_view(asked(word))
        return model.shape.vocab_size + int(view.word_keys[view.word_keys >= 0][-1])

    animals = ("cat", "fox", "owl")
    model.observe(model.features([asked(w) for w in ("cat, cup, lamp", "fox, owl, key", "cup, key, hat")], [[]] * 3))
    # a word every prompt holds says nothing a bias does not: no step; a word some hold, a step
    scales = model.step_scales(model.features([asked("cat, cup, lamp"), asked("fox, owl, key")], [[]] * 2))
    assert scales["N_words"][row("animals") - model.shape.vocab_size] == 0.0
    assert scales["N_words"][row("cat") - model.shape.vocab_size] == 1.0
    # one weight per word: the count of animals among words never seen together
    for animal in animals:
        p["N_words"][row(animal) - model.shape.vocab_size] = 1.0 / GAINS["N_tally"]
    mean = sum(model.params["N_tally_mean"][row(a)] for a in animals)
    p["N_bias"][0] = mean / (GAINS["N_bias"] * BIAS_INPUT)
    p["N_spread"][:] = np.log(0.3) / GAINS["N_spread"]
    p["N_mix"][:] = np.log(0.999 / 0.001) / GAINS["N_mix"]
    for words, count in (("owl, fox, cat, owl", "4"), ("hat, lamp", "0"), ("cup, fox, key, cat", "2")):
        reply = generate(model, asked(words), n=1, max_tokens=4, temperature=0.0, rng=np.random.default_rng(0))[0]
        assert TOK.decode(reply.token_ids) == count
    # numbers are read as values, not counted as words
    feats = model.features([asked("7 cats")], [[]])
    words = slice(model.shape.vocab_size, model.shape.vocab_size + model.shape.word_rows)
    assert feats.tally[0, words].sum() == 5  # How, many, are, animals, cats


def test_the_number_path_counts_letters_capitals_digits_and_numbers_as_one_count_each() -> None:
    model = PolicyModel.initialise(TOK, hidden_size=8, seed=4, dtype=np.float64)
    feats = model.features([TOK.generation_prompt([{"role": "user", "content": "Code k4P92 or 17?"}])], [[]])
    s = model.shape
    letters, capitals, digits, numbers = feats.tally[0, s.vocab_size + s.word_rows :]
    # C,o,d,e,k,P,o,r; the code's 4, 9 and 2, not the number 17's digits; 17
    assert (letters, capitals, digits, numbers) == (8, 2, 3, 1)
    # one weight counts the digits of codes never seen, where per digit they are left out
    p = model.params
    p["N_classes"][2] = 1.0 / GAINS["N_tally"]
    p["N_lone"][:] = 0.0
    p["N_spread"][:] = np.log(0.3) / GAINS["N_spread"]
    p["N_mix"][:] = np.log(0.999 / 0.001) / GAINS["N_mix"]
    for code, count in (("a1b2c3", "3"), ("zz9q", "1"), ("77x7y07", "5")):
        prompt = TOK.generation_prompt([{"role": "user", "content": f"How many digits in {code}?"}])
        reply = generate(model, prompt, n=1, max_tokens=4, temperature=0.0, rng=np.random.default_rng(0))[0]
        assert TOK.decode(reply.token_ids) == count


def test_the_copy_map_can_change_case_one_way_for_some_letters_and_the_other_way_for_others() -> None:
    model = PolicyModel.initialise(TOK, hidden_size=8, seed=3, dtype=np.float64)
    p = model.params
    from_lower, from_upper = p["R"].size - 2, p["R"].size - 1
    p["R"][[from_lower, from_upper]] = 10.0 / GAINS["R"]  # past the identity's lead of 8 nats
    images = model._images()
    assert TOK.decode(images[TOK.encode("hELLo7!")]) == "HellO7!"
    # one code distance cannot do both: 32 down from "e" is "E", 32 down from "E" is "%"
    p["R"][[from_lower, from_upper]] = 0.0
    p["R"][model.shape.vocab_size - 1 - 32] = 10.0 / GAINS["R"]
    assert TOK.decode(model._images()[TOK.encode("hELLo")]) == "H%,,O"
    # the gradient reaches both weights, as finite differences say
    prompt = TOK.generation_prompt([{"role": "user", "content": "Swap: hELLo"}])
    feats = model.features([prompt] * 2, [[], TOK.encode("H")])
    targets = np.asarray(TOK.encode("He"))

    def objective() -> float:
        return float(model.token_logprobs(feats, targets)[0].sum())

    grads = model.backward(model.token_logprobs(feats, targets)[1], targets, np.ones(2))
    for index in (from_lower, from_upper):
        assert grads["R"][index] != 0.0 and numeric_gradient(objective, p["R"], index) == pytest.approx(grads["R"][index], rel=1e-5)


def test_the_case_switch_can_change_the_case_of_one_letter_and_the_copy_goes_on() -> None:
    from hermes_rl_mcp.trainer.model import NEIGHBOUR_OFFSETS

    model = PolicyModel.initialise(TOK, hidden_size=8, seed=3, dtype=np.float64)
    prompt = TOK.generation_prompt([{"role": "user", "content": "Capitalize: rivet"}])
    feats = model.features([prompt] * 2, [[], TOK.encode("R")])
    # "R" continues "rivet" as "r" would: the neighbour scores match letters whatever their case
    i_slots = np.flatnonzero(feats.slots[1, : model.shape.window] == TOK.encode("i")[0])  # rIvet, capItalIze
    assert feats.follows[1, i_slots, NEIGHBOUR_OFFSETS.index(1)].tolist() == [1.0, 0.0, 0.0]
    plain = model.forward(feats).probs
    model.params["P_case"][:] = -8.0 / GAINS["P_case"]
    model.params["P_case"][0] = 8.0 / GAINS["P_case"]  # a capital first, then the letters as they are
    switched = model.forward(feats).probs
    lower, upper = TOK.encode("rivet"), TOK.encode("RIVET")
    # at the first step the copied letters come out as capitals, after it as they are
    assert switched[0, upper].sum() > 10 * plain[0, upper].sum() and switched[0, upper].sum() > 10 * switched[0, lower].sum()
    assert switched[1, lower].sum() > 40 * switched[1, upper].sum()

    # it learns from the tokens a batch pushes up, as finite differences say, and from no other
    model = small_model()
    model.params["P_case"][:] = 0.0  # half of each letter switched: a gradient well above rounding
    feats = model.features([prompt] * 2, [[], TOK.encode("R")])
    targets = np.asarray(TOK.encode("Ri"))
    up = np.array([0.8, 1.3])

    def objective() -> float:
        return float(model.token_logprobs(feats, targets)[0] @ up)

    grads = model.backward(model.token_logprobs(feats, targets)[1], targets, up)
    for name, index in (("P_case", 0), ("P_case", 1), ("Q_case", 2), ("W_in", 7), ("b1", 3)):
        numeric = numeric_gradient(objective, model.params[name], index)
        assert numeric == pytest.approx(grads[name].flat[index], rel=1e-5, abs=1e-8), name
    down = model.backward(model.token_logprobs(feats, targets)[1], targets, np.array([0.8, -1.3]))
    assert down["P_case"][1] == 0.0 and down["P_case"][0] == grads["P_case"][0]


def test_a_reply_to_a_lone_number_starts_at_that_number() -> None:
    model = PolicyModel.initialise(TOK, hidden_size=8, seed=4, dtype=np.float64)
    texts = ("What comes after 38?", "7+8", "no number", "Start with 6.")
    feats = model.features([TOK.generation_prompt([{"role": "user", "content": t}]) for t in texts], [[]] * len(texts))
    assert model._number_value(feats).tolist() == [38.0, 0.0, 0.0, 6.0]


def test_value_weights_on_large_numbers_take_small_steps_and_steps_shrink_as_the_value_settles() -> None:
    model = PolicyModel.initialise(TOK, hidden_size=8, seed=4)
    years = model.features([TOK.generation_prompt([{"role": "user", "content": "from 1961 to 1994"}])], [[]])
    digits = model.features([TOK.generation_prompt([{"role": "user", "content": "7+8"}])], [[]])
    wide = model.step_scales(years)  # the spread starts wide: only the inputs' size counts
    # a step moves the value about as far through 1961 as through 7
    assert wide["N_place"][0] == pytest.approx(10.0 / 1961) and wide["N_diff"][0] == pytest.approx(10.0 / 33)
    assert model.step_scales(digits)["N_place"][0] == 1.0 and wide["N_bias"][0] == 1.0
    assert wide["N_place"][2] == 0.0 and wide["N_before"][TOK.encode("+")[0]] == 0.0  # no input this batch: no step
    model.params["N_spread"][:] = np.log(0.25) / GAINS["N_spread"]
    settled = model.step_scales(digits)
    # the bias is a weight on a constant input of STEP_REFERENCE: its steps shrink as a number's do
    assert settled["N_place"][0] == pytest.approx(10.0 * 0.25**2 / 7) and settled["N_bias"][0] == pytest.approx(0.25**2)

    # with the spread wide, a step of the bias moves the value as far as a step of the weight on a
    # number of 10 or more does, so a constant such as 60 is reached as fast as a number's weight
    model.params["N_spread"][:] = np.log(8.0) / GAINS["N_spread"]
    ten = model.features([TOK.generation_prompt([{"role": "user", "content": "It is 3:10."}])], [[]])
    scales = model.step_scales(ten)
    moved = {}
    for name, index in (("N_bias", 0), ("N_place", 1)):  # the 10 is the message's second number
        before = model._prompt_values(ten)[0]
        model.params[name][index] += 1e-3 * scales[name][index]  # an Adam step of 1e-3, scaled
        moved[name] = model._prompt_values(ten)[0] - before
    assert moved["N_bias"] == pytest.approx(moved["N_place"], rel=1e-4)


def test_prompt_word_exploration_replaces_samples_with_whole_words_and_their_own_logprobs() -> None:
    from hermes_rl_mcp.trainer.exploration import explore, prompt_phrases, prompt_words

    model = small_model(np.float32)
    prompt = TOK.generation_prompt([{"role": "user", "content": "Is 47 even or odd? Say it."}])
    words = [TOK.decode(w) for w in prompt_words(model, prompt, max_tokens=4, constraint=None)]
    assert words == ["Is", "47", "or", "odd", "Say", "it"]  # "even" and its end token need 5
    rng = np.random.default_rng(0)
    sampled = generate(model, prompt, n=8, max_tokens=5, temperature=1.0, rng=rng)
    explored = explore(
        model, prompt, sampled, share=1.0, max_tokens=5, temperature=0.7, constraint=None, rng=rng, case_share=0.0, rewrite_share=0.0
    )
    assert len(explored) == 8
    for sample in explored:
        assert sample.token_ids[-1] == END and sample.finish_reason == "stop"
        assert TOK.decode(sample.token_ids) in {"Is", "47", "even", "or", "odd", "Say", "it", "94"}  # 94: 47 + 47
        own = model.completion_logprobs(prompt, sample.token_ids, temperature=0.7)
        np.testing.assert_allclose(sample.logprobs, own, atol=1e-4)
    # a constraint keeps exploration to the allowed strings, under the same masks as sampling
    constraint = ChoiceConstraint(["even", "odd", "neither"], TOK)
    allowed = explore(
        model, prompt, sampled, share=1.0, max_tokens=8, temperature=1.0, constraint=constraint, rng=rng, case_share=0.0, rewrite_share=0.0
    )
    assert {TOK.decode(s.token_ids) for s in allowed} <= {"even", "odd"}
    for sample in allowed:  # each explored word carries the masked logprobs the sampler reports
        ids = sample.token_ids
        feats = model.features([prompt] * len(ids), [ids[:k] for k in range(len(ids))])
        masks = np.stack([constraint.allowed(ids[:k]) for k in range(len(ids))])
        expected, _ = model.token_logprobs(feats, np.asarray(ids), 1.0, masks)
        np.testing.assert_allclose(sample.logprobs, expected, atol=1e-5)
    # in a conversation, the words of its first message are explored too
    conversation = TOK.generation_prompt([
        {"role": "user", "content": "Remember plum. Say OK."}, {"role": "assistant", "content": "OK"},
        {"role": "user", "content": "Which fruit?"},
    ])
    words = [TOK.decode(w) for w in prompt_words(model, conversation, max_tokens=9, constraint=None)]
    assert words == ["Remember", "plum", "Say", "OK", "Which", "fruit"]
    # and of the user's message before the last (not the policy's own replies)
    longer = TOK.generation_prompt([
        {"role": "user", "content": "Remember plum."}, {"role": "assistant", "content": "Sure"},
        {"role": "user", "content": "And pear."}, {"role": "assistant", "content": "Fine"},
        {"role": "user", "content": "Which fruit?"},
    ])
    words = [TOK.decode(w) for w in prompt_words(model, longer, max_tokens=9, constraint=None)]
    assert words == ["Remember", "plum", "And", "pear", "Which", "fruit"]
    # a run between spaces with marks inside is one word too, less the punctuation at its ends
    calendar = TOK.generation_prompt([{"role": "user", "content": "Free at 10:30am, (555) 123-4567 or O'Neil's e-mail?"}])
    words = [TOK.decode(w) for w in prompt_words(model, calendar, max_tokens=12, constraint=None)]
    assert words == ["Free", "at", "10", "30am", "10:30am", "555", "123", "4567", "123-4567", "or", "O", "Neil", "s", "O'Neil's", "e", "mail", "e-mail"]
    # two words in either order, or one word twice, when they fit: answers that join, reorder
    # or repeat the prompt's words
    phrases = {TOK.decode(w) for w in prompt_phrases(model, prompt, max_tokens=6, constraint=None)}
    short = ("Is", "47", "or", "it")  # two of them and a space and the end token fit 6 tokens
    assert phrases == {f"{a} {b}" for a in short for b in short}
    assert "it it" in phrases and "Is it" in phrases and "it Is" in phrases
    texts = explored_texts(model, prompt, 64, 6, rng, case_share=0.0, rewrite_share=0.0)
    assert set(texts) <= phrases | {"Is", "47", "even", "or", "odd", "Say", "it", "94"}
    assert 10 <= texts.count("94") <= 32  # a third of them: the prompt holds a number
    assert 10 <= sum(text in phrases for text in texts) <= 32  # half of the rest
    # greedy decoding (evaluation) and a zero share never explore
    greedy = generate(model, prompt, n=2, max_tokens=5, temperature=0.0, rng=rng)
    assert explore(model, prompt, greedy, share=1.0, max_tokens=5, temperature=0.0, constraint=None, rng=rng) == greedy
    assert explore(model, prompt, sampled, share=0.0, max_tokens=5, temperature=1.0, constraint=None, rng=rng) == sampled


def test_a_request_whose_samples_are_all_one_reply_gets_two_of_them_forked() -> None:
    from hermes_rl_mcp.trainer.exploration import ExploredTurns, explore
    from hermes_rl_mcp.trainer.sampling import Generation

    model = small_model(np.float32)
    prompt = TOK.generation_prompt([{"role": "user", "content": "plane"}])
    reply = TOK.encode("ena") + [END]  # one letter short, as a policy sure of it writes it eight times
    unanimous = [Generation(list(reply), [0.0] * len(reply), "stop") for _ in range(8)]
    rng = np.random.default_rng(0)
    changed_at: set[int] = set()
    for _ in range(40):
        record = ExploredTurns()
        out = explore(model, prompt, unanimous, share=0.0, max_tokens=6, temperature=1.0, constraint=None, rng=rng,
                      record=record, fork_share=1.0)
        forks = [sample for sample in out if sample.token_ids != reply]
        assert len(forks) == 2 and len(out) == 8
        # one by a word (the prompt's only word in place of the reply's), one by a character
        by_word = TOK.encode("plane") + [END]
        forks.sort(key=lambda sample: sample.token_ids != by_word)
        assert forks[0].token_ids == by_word and record.kind(prompt, by_word) == "fork"
        fork = forks[1].token_ids
        at = next(k for k, (a, b) in enumerate(zip(fork, reply)) if a != b)
        changed_at.add(at)
        # the same reply up to one token, which is a character of the prompt's message or the end
        assert fork[:at] == reply[:at] and TOK.decode([fork[at]]) in "plane" or fork[at] == END
        assert len(fork) <= 6 and len(forks[1].logprobs) == len(fork)
        assert all(lp <= 0 for lp in forks[1].logprobs)
        assert record.kind(prompt, fork) == "fork"
    assert changed_at == {0, 1, 2, 3}  # every position, the end token's included
    # samples that differ get a fork by a word only; a zero share and greedy decoding, none
    varied = [*unanimous[:7], Generation(TOK.encode("enalp") + [END], [0.0] * 6, "stop")]
    out = explore(model, prompt, varied, share=0.0, max_tokens=6, temperature=1.0, constraint=None, rng=rng, fork_share=1.0)
    assert sorted(TOK.decode(s.token_ids) for s in out if s not in varied) == ["plane"]
    assert explore(model, prompt, unanimous, share=0.0, max_tokens=6, temperature=1.0, constraint=None, rng=rng) == unanimous
    assert explore(model, prompt, unanimous, share=0.0, max_tokens=6, temperature=0.0, constraint=None, rng=rng, fork_share=1.0) == unanimous


def test_a_fork_by_a_word_replaces_one_word_of_the_reply_by_one_of_the_prompts() -> None:
    from hermes_rl_mcp.trainer.exploration import ExploredTurns, explore
    from hermes_rl_mcp.trainer.sampling import Generation

    model = small_model(np.float32)
    prompt = TOK.generation_prompt([{"role": "user", "content": "If I convert beach_2023.heic to png, what's the new name?"}])
    reply = TOK.encode("beach_2023.heic") + [END]  # the name copied whole, its old extension too
    unanimous = [Generation(list(reply), [0.0] * len(reply), "stop") for _ in range(8)]
    prompt_words = {"If", "I", "convert", "beach", "2023", "heic", "beach_2023.heic", "to", "png", "what", "s", "what's", "the", "new", "name"}
    rng = np.random.default_rng(5)
    seen: set[str] = set()
    for _ in range(200):
        record = ExploredTurns()
        out = explore(model, prompt, unanimous, share=0.0, max_tokens=30, temperature=1.0, constraint=None, rng=rng,
                      record=record, fork_share=1.0)
        for sample in out:
            text = TOK.decode(sample.token_ids)
            before = TOK.decode(reply[:-1])
            if sample.token_ids == reply or sample.token_ids[-1] != END or record.kind(prompt, sample.token_ids) != "fork":
                continue
            # the reply with one of its words (beach, 2023, heic) replaced by a word of the prompt
            for word in ("beach", "2023", "heic"):
                head, _, tail = before.partition(word)
                if text.startswith(head) and text.endswith(tail) and text[len(head) : len(text) - len(tail)] in prompt_words - {word}:
                    seen.add(text)
                    assert len(sample.logprobs) == len(sample.token_ids) and all(lp <= 0 for lp in sample.logprobs)
    assert "beach_2023.png" in seen  # the near answer a fork by one character would seldom reach
    assert {"png_2023.heic", "beach_png.heic"} & seen

def test_a_sample_can_start_from_given_tokens() -> None:
    model = small_model(np.float32)
    prompt = TOK.generation_prompt([{"role": "user", "content": "plane"}])
    given = TOK.encode("en")
    rng = np.random.default_rng(3)
    out = generate_batch(model, [SampleJob(prompt, 4, 5, rng, prefix=given)], temperature=1.0)[0]
    assert all(sample.token_ids[:2] == given and len(sample.token_ids) <= 5 for sample in out)
    # the given tokens carry the policy's logprobs, as sampled ones do
    logp, _ = model.token_logprobs(model.features([prompt, prompt], [[], given[:1]]), np.asarray(given), 1.0)
    np.testing.assert_allclose(out[0].logprobs[:2], logp, rtol=1e-5)


def test_exploration_writes_the_prompts_words_in_other_cases_too() -> None:
    from hermes_rl_mcp.trainer.exploration import explore

    model = small_model(np.float32)
    prompt = TOK.generation_prompt([{"role": "user", "content": "Capitalize: rivet"}])
    rng = np.random.default_rng(4)
    texts = explored_texts(model, prompt, 64, 12, rng, case_share=1.0)
    assert {"Rivet", "RIVET"} <= set(texts)
    words = {"rivet", "capitalize"}
    pairs = {f"{a} {b}" for a in words for b in words}
    # every one is a word or two of the prompt, in a case the prompt does not write them in
    assert all(text.lower() in words | pairs and text not in ("rivet", "Capitalize") for text in texts)
    # a constraint still holds: only the variants it allows are offered
    constraint = ChoiceConstraint(["Rivet", "rivet"], TOK)
    samples = generate(model, prompt, n=64, max_tokens=12, temperature=1.0, rng=rng)
    allowed = {TOK.decode(s.token_ids) for s in explore(
        model, prompt, samples, share=1.0, max_tokens=12, temperature=1.0, constraint=constraint, rng=rng, case_share=1.0
    )}
    assert "Rivet" in allowed and allowed <= {"Rivet", "rivet"}


def test_exploration_offers_sums_and_differences_of_the_prompts_numbers() -> None:
    from hermes_rl_mcp.trainer.exploration import explore, prompt_sums

    model = small_model(np.float32)

    def sums(content: str, max_tokens: int = 5) -> list[str]:
        prompt = TOK.generation_prompt([{"role": "user", "content": content}])
        return [TOK.decode(s) for s in prompt_sums(model, prompt, max_tokens=max_tokens, constraint=None)]

    assert sums("It costs 34 and I pay with 50. How much change?") == ["16", "68", "84", "100"]
    assert sums("What is double 7?") == ["14"]
    assert sums("Plural of box?") == []
    assert sums("From 1961 to 1994?") == ["33"]  # the sums are past what the number path spells
    assert sums("It costs 34 and I pay with 50.", max_tokens=3) == ["16", "68", "84"]  # 100 needs 4 tokens
    # in a conversation, the opening message's numbers too
    conversation = TOK.generation_prompt([
        {"role": "user", "content": "Remember 12."}, {"role": "assistant", "content": "OK"},
        {"role": "user", "content": "Add 5."},
    ])
    assert [TOK.decode(s) for s in prompt_sums(model, conversation, max_tokens=4, constraint=None)] == ["7", "10", "17", "24"]
    # under a constraint that allows no number, no sum is offered: only the allowed words
    prompt = TOK.generation_prompt([{"role": "user", "content": "Is 8 more than 3? yes or no"}])
    rng = np.random.default_rng(1)
    sampled = generate(model, prompt, n=64, max_tokens=4, temperature=1.0, rng=rng)
    constraint = ChoiceConstraint(["yes", "no"], TOK)
    texts = {TOK.decode(s.token_ids) for s in explore(
        model, prompt, sampled, share=1.0, max_tokens=4, temperature=1.0, constraint=constraint, rng=rng, case_share=0.0, rewrite_share=0.0
    )}
    assert texts <= {"yes", "no"}


def test_exploration_offers_a_list_of_the_prompts_in_new_orders() -> None:
    from itertools import permutations

    model = small_model(np.float32)
    prompt = TOK.generation_prompt([{"role": "user", "content": "Order: fig, kiwi, plum"}])
    reorders = {", ".join(p) for p in permutations(["fig", "kiwi", "plum"])}
    rng = np.random.default_rng(3)
    texts = explored_texts(model, prompt, 96, 16, rng, case_share=0.0, rewrite_share=0.0)
    offered = [text for text in texts if text in reorders]
    assert 16 <= len(offered) <= 48  # a third of 96 (31.5 on average over 30 seeds, 19 to 46): the prompt holds a list
    assert len(set(offered)) >= 4  # in many orders (half of them random), the list's own among them
    spans = {"fig, kiwi", "kiwi, plum"}  # runs of the list's words as written ("Order: fig" is no run: ":" ends a phrase)
    words = ("Order", "fig", "kiwi", "plum")  # a list's item is one of them
    assert set(texts) - reorders - spans <= set(words) | {f"{a} {b}" for a in words for b in words}
    # a reordered list longer than the reply may be is not offered
    short = explored_texts(model, prompt, 96, 12, rng, case_share=0.0, rewrite_share=0.0)
    assert not set(short) & reorders
    # a list of records offers its keys reordered: "the names from the highest score down"
    records = TOK.generation_prompt([{"role": "user", "content": "Scores: Ann 7, Bob 19, Cy 5. Rank them."}])
    texts = explored_texts(model, records, 96, 16, rng, case_share=0.0, rewrite_share=0.0)
    keys = {", ".join(p) for p in permutations(["Ann", "Bob", "Cy"])}
    assert 16 <= sum(text in keys for text in texts) <= 48 and len(set(texts) & keys) >= 4


def test_exploration_offers_a_list_in_the_orders_lists_are_most_often_asked_for() -> None:
    from hermes_rl_mcp.trainer.exploration import orders

    # reversed; by the numbers each item holds (a time's minutes after its hours), alphabetically,
    # by the last word and by length, each from either end; an order found twice is offered once
    assert orders(["Ember (3:42)", "Orbit (2:58)", "Velvet (3:05)"]) == [[2, 1, 0], [1, 2, 0], [0, 2, 1], [0, 1, 2], [2, 0, 1], [1, 0, 2]]
    assert orders(["pear", "fig", "banana"]) == [[2, 1, 0], [0, 1, 2], [1, 0, 2], [2, 0, 1]]  # no numbers: no order by them
    assert [1, 0, 3, 2] in orders(["Anna Berg", "Carl Ames", "Bo Dahl", "Di Cole"])  # by surname
    assert [1, 3, 0, 2] in orders(["Sam, row C", "Tom, row A", "Ida, row D", "Bo, row B"])  # records by what is said of each
    model = small_model(np.float32)
    heights = "Heights: Ana 165 cm, Ben 172 cm, Cara 158 cm, Dev 181 cm, Eve 169 cm. Shortest first?"
    prompt = TOK.generation_prompt([{"role": "user", "content": heights}])
    texts = explored_texts(model, prompt, 480, 40, np.random.default_rng(2), case_share=0.0, rewrite_share=0.0)
    # one explored answer in about 42 (a sixth are sorted lists, in one of seven orders); a random
    # order of five is this one once in 120 reorders, under one in 480 answers
    assert 5 <= texts.count("Cara, Ana, Eve, Ben, Dev") <= 30
    assert texts.count("Dev, Ben, Eve, Ana, Cara") >= 3  # the other way round too


def test_exploration_offers_a_lists_items_and_runs_of_words_as_the_prompt_writes_them() -> None:
    model = small_model(np.float32)
    rng = np.random.default_rng(7)
    menu = TOK.generation_prompt([{"role": "user", "content": "Which is vegetarian: lamb wrap, tomato soup or turkey salad?"}])
    texts = explored_texts(model, menu, 240, 16, rng, case_share=0.0, rewrite_share=0.0)
    items = {"lamb wrap", "tomato soup", "turkey salad"}
    # a quarter of what the reordered lists leave, half of them from the list of the items' first
    # words ("lamb, tomato, turkey"), and runs as written add to them: 19 to 31 over seeds 0 to 7
    assert 10 <= sum(text in items for text in texts) <= 80 and items <= set(texts)
    assert {"wrap, tomato", "soup or turkey"} & set(texts)
    # a name of two words, with no list: a run of the phrase as written (11 to 23 over seeds 0 to 7)
    badge = TOK.generation_prompt([{"role": "user", "content": "Drop the title: Dr. Anna Berg"}])
    texts = explored_texts(model, badge, 240, 16, rng, case_share=0.0, rewrite_share=0.0)
    assert texts.count("Anna Berg") >= 5


def test_exploration_rewrites_runs_of_a_phrases_words() -> None:
    model = small_model(np.float32)
    prompt = TOK.generation_prompt([{"role": "user", "content": "Initials of: Laura Jean Patel, snake_case"}])
    rng = np.random.default_rng(5)
    texts = explored_texts(model, prompt, 96, 24, rng, case_share=0.0, rewrite_share=0.5)
    # ":" ends a phrase, so nothing joins "of" to "Laura"; "," and "_" link words
    runs = [["Initials", "of"], ["Laura", "Jean"], ["Jean", "Patel"], ["Laura", "Jean", "Patel"], ["Patel", "snake"], ["snake", "case"]]
    runs += [["Jean", "Patel", "snake"], ["Laura", "Jean", "Patel", "snake"], ["Patel", "snake", "case"], ["Jean", "Patel", "snake", "case"]]
    initials = {"".join(word[0] for word in run) for run in runs}
    reversed_runs = {" ".join(run[::-1]) for run in runs}
    rejoined = {case(join.join(run)) for run in runs for join in ("_", "") for case in (str, str.lower, str.upper)}
    assert 12 <= sum(text in initials for text in texts) <= 36  # half of the rewrites, a quarter of all
    assert 4 <= sum(text in reversed_runs for text in texts) <= 20  # an eighth of all
    assert 4 <= sum(text in rejoined for text in texts) <= 20
    assert {"LJP", "Patel Jean Laura", "laura_jean_patel", "LAURAJEAN"} & set(texts)
    rejoined |= reversed_runs
    content = "Initials of: Laura Jean Patel, snake_case"
    spans = {content[content.index(run[0]) : content.rindex(run[-1]) + len(run[-1])] for run in runs}  # each run as written
    assert "Laura Jean Patel" in spans and "Patel, snake_case" in spans and spans & set(texts)
    words = {"Initials", "of", "Laura", "Jean", "Patel", "snake", "case", "snake_case"}  # a run between spaces is one word too
    assert set(texts) - initials - rejoined - spans <= words | {f"{a} {b}" for a in words for b in words}
    # a rewrite too long for the reply gives way to a word that fits: every sample is explored
    texts = explored_texts(model, prompt, 96, 4, rng, case_share=0.0, rewrite_share=1.0)
    assert set(texts) <= {text for text in initials if len(text) <= 3} | {"of"} and "of" in texts
    # with no phrase of two words, there is nothing to rewrite
    lone = TOK.generation_prompt([{"role": "user", "content": "Word: kiwi"}])
    texts = explored_texts(model, lone, 96, 8, rng, case_share=0.0, rewrite_share=1.0)
    assert set(texts) <= {"Word", "kiwi", "Word kiwi", "kiwi Word", "Word Word", "kiwi kiwi"}


def test_exploration_draws_the_words_that_change_from_prompt_to_prompt_and_joins_them_with_nothing_too() -> None:
    from hermes_rl_mcp.trainer.exploration import WordFrequencies, explore

    model = small_model(np.float32)

    def asked(first: str, second: str) -> list[int]:
        return TOK.generation_prompt([
            {"role": "user", "content": f"First letter: {first}. Reply OK."}, {"role": "assistant", "content": "OK"},
            {"role": "user", "content": f"Second letter: {second}. Reply OK."}, {"role": "assistant", "content": "OK"},
            {"role": "user", "content": "Now write both letters together."},
        ])

    def explored(prompt: list[int], frequencies: WordFrequencies | None, n: int) -> list[str]:
        samples = generate(model, prompt, n=n, max_tokens=6, temperature=1.0, rng=rng)
        return [TOK.decode(s.token_ids) for s in explore(
            model, prompt, samples, share=1.0, max_tokens=6, temperature=1.0, constraint=None, rng=rng,
            frequencies=frequencies, case_share=0.0,
        )]

    rng = np.random.default_rng(5)
    frequencies = WordFrequencies()
    pairs = [(a, b) for a in "abcdefghij" for b in "klmnopqrst"]
    for first, second in pairs[:40]:  # the prompts a run has explored so far
        explored(asked(first, second), frequencies, 1)
    rarity = frequencies.rarity([TOK.encode(w) for w in ("Reply", "letters", "a", "k")])
    assert rarity is not None and rarity[:2].tolist() == [1.0, 1.0] and rarity[2] == 4.0 and rarity[3] == 10.0  # "a" in 10 of the 40, "k" in 4
    # a fifth of the samples are pairs drawn by rarity, and this prompt's letters, new to the
    # run, are the rarest of its twelve words: nearly all of those are "uz", "zu", "u z", "uu"...
    texts = explored(asked("u", "z"), frequencies, 400)
    letters = {f"{a}{join}{b}" for a in "uz" for b in "uz" for join in ("", " ")}
    assert sum(text in letters for text in texts) >= 50  # 66 to 94 over seeds 0 to 11
    assert 2 <= texts.count("uz") <= 30  # 3 to 12
    # drawn evenly, as before enough prompts are seen, "uz" is one of 144 pairs, all with a space
    assert "uz" not in explored(asked("u", "z"), None, 400)
    assert "uz" not in explored(asked("u", "z"), WordFrequencies(), 400)


def test_a_number_path_that_is_all_but_certain_leaves_other_replies_a_finite_logprob() -> None:
    """Once the path's share rounds to 1, a word the policy would not write (an explored one)
    still has a finite logprob: the policy server reports it in JSON, which has no -inf."""
    from hermes_rl_mcp.trainer.exploration import explore

    model = small_model(np.float64)
    model.params["N_mix"][:] = 50.0 / GAINS["N_mix"]  # a share of 1 - 2e-22: 1.0 in floating point
    prompt = TOK.generation_prompt([{"role": "user", "content": "It costs 34 and I pay with 50."}])
    for word in ("It", "pay", "16"):
        logprobs = model.completion_logprobs(prompt, TOK.encode(word) + [END])
        assert np.isfinite(logprobs).all(), (word, logprobs)
    rng = np.random.default_rng(2)
    sampled = generate(model, prompt, n=16, max_tokens=4, temperature=1.0, rng=rng)
    explored = explore(model, prompt, sampled, share=1.0, max_tokens=4, temperature=1.0, constraint=None, rng=rng)
    assert all(np.isfinite(s.logprobs).all() for s in [*sampled, *explored])


def test_answers_that_scored_above_their_group_are_kept_for_other_prompts() -> None:
    from hermes_rl_mcp.sdk.env_types import PROMPT_MASK
    from hermes_rl_mcp.trainer.exploration import RewardedAnswers
    from hermes_rl_mcp.trainer.grpo import flatten_groups

    def group(question: str, answers: list[str], scores: list[float]) -> dict:
        prompt = TOK.generation_prompt([{"role": "user", "content": question}])
        replies = [[*TOK.encode(a), END] for a in answers]
        return {
            "tokens": [prompt + r for r in replies],
            "masks": [[PROMPT_MASK] * len(prompt) + r for r in replies],
            "scores": scores,
        }

    rewarded = RewardedAnswers(capacity=3)
    rewarded.add_from(flatten_groups([
        group("How many a's in aab?", ["2", "b", "1", "2"], [1.0, 0.0, 0.0, 1.0]),
        group("How many a's in bbb?", ["0", "3"], [0.0, 0.0]),  # all alike: nothing scored above the group
    ]))
    assert [TOK.decode(a) for a in rewarded.fitting(8, None)] == ["2"]
    rewarded.add_from(flatten_groups([group("How many a's in aba?", ["7", "b", "3"], [0.2, 0.1, 0.0])]))
    assert [TOK.decode(a) for a in rewarded.fitting(8, None)] == ["2", "7"]  # above the mean, not only the best
    for answer in ("4", "5"):
        rewarded.add([*TOK.encode(answer), END])
    assert [TOK.decode(a) for a in rewarded.fitting(8, None)] == ["7", "4", "5"]  # the oldest falls out
    assert rewarded.fitting(1, None) == []  # an answer and its end token need 2 tokens
    assert [TOK.decode(a) for a in rewarded.fitting(8, ChoiceConstraint(["4", "40"], TOK))] == ["4"]


def test_a_kind_of_exploration_whose_samples_score_is_offered_more() -> None:
    from hermes_rl_mcp.sdk.env_types import PROMPT_MASK
    from hermes_rl_mcp.trainer.exploration import ExploredTurns, explore
    from hermes_rl_mcp.trainer.grpo import flatten_groups

    model = small_model(np.float32)
    prompt = TOK.generation_prompt([{"role": "user", "content": "Reverse: red fox runs"}])
    rng = np.random.default_rng(6)
    record = ExploredTurns()

    def reversed_share() -> float:
        samples = generate(model, prompt, n=400, max_tokens=16, temperature=1.0, rng=rng)
        explored = explore(model, prompt, samples, share=1.0, max_tokens=16, temperature=1.0, constraint=None, rng=rng, record=record)
        return sum(TOK.decode(s.token_ids) == "runs fox red" for s in explored) / len(explored)

    before = reversed_share()
    assert record.records()["reversed"] == 0.0
    # the learner trains on groups where the explored reversal scored and the explored
    # initials did not
    for _ in range(6):
        replies = [[*TOK.encode(text), END] for text in ("runs fox red", "rfr", "red", "fox")]
        for reply, kind in zip(replies[:2], ("reversed", "initials")):
            record.add(prompt, reply, kind)
        record.credit(flatten_groups([{
            "tokens": [prompt + r for r in replies],
            "masks": [[PROMPT_MASK] * len(prompt) + r for r in replies],
            "scores": [1.0, 0.0, 0.0, 0.0],
        }]))
    records = record.records()
    assert records["initials"] == 0.0 and records["word"] == 0.0  # tried and lost, or never tried
    assert 0.3 < records["reversed"] < 1.0  # 6 of 6, counted as if 8 more had not scored
    after = reversed_share()
    # before: a third of the reversals, a 24th of the rewrites (0.014); after, about a ninth of
    # all the replacements (0.09 to 0.125 over eight seeds: the bound leaves three deviations)
    assert before < 0.03 and after > 0.06


def test_the_sampler_explores_more_while_explored_samples_make_the_groups_that_teach() -> None:
    from hermes_rl_mcp.sdk.env_types import PROMPT_MASK
    from hermes_rl_mcp.trainer.exploration import ExploredTurns
    from hermes_rl_mcp.trainer.grpo import flatten_groups
    from hermes_rl_mcp.trainer.policy_server import PolicyHolder, SamplingRequest

    record = ExploredTurns()
    holder = PolicyHolder(model=small_model(np.float32), explore_prompt_words=0.1, explored=record, rng=np.random.default_rng(3))
    prompt = TOK.generation_prompt([{"role": "user", "content": "Priya came first, then Tom. Who came first?"}])

    async def serve(requests: int) -> list[list[list[int]]]:
        request = SamplingRequest(n=8, max_tokens=8, temperature=1.0)
        return [[s.token_ids for s in await holder.sample(request, prompt)] for _ in range(requests)]

    def explored_share(groups: list[list[list[int]]]) -> float:
        # the replacements, which the boost scales; not the fork by a word each request gets
        # (the record is by content: a fork that comes out as one of the prompt's words counts
        # under the kind that wrote that word last, so the share reads a little above 0.1)
        return float(np.mean([record.kind(prompt, reply) not in (None, "fork") for group in groups for reply in group]))

    def train_on(replies: list[list[int]], winner: int) -> None:
        record.credit(flatten_groups([{
            "tokens": [prompt + r for r in replies],
            "masks": [[PROMPT_MASK] * len(prompt) + r for r in replies],
            "scores": [float(k == winner) for k in range(len(replies))],
        }]))

    assert record.boost() == 1.0 and 0.05 < explored_share(asyncio.run(serve(40))) < 0.2
    # sixteen groups served for each one trained on, and in each trained group the sample that
    # scored was an explored one: exploration is what finds the answers
    for _ in range(12):
        groups = asyncio.run(serve(16))
        explored = next(g for g in reversed(groups) if any(record.kind(prompt, r) is not None for r in g))
        train_on(explored, next(k for k, r in enumerate(explored) if record.kind(prompt, r) is not None))
    boost = record.boost()
    assert 3.0 < boost <= 4.0  # about the square root of 16
    assert 0.25 < explored_share(asyncio.run(serve(40))) < 0.5  # 0.1 times the boost
    # then the policy's own samples score, and every group served is trained on: back to the share
    for _ in range(20):
        groups = asyncio.run(serve(1))
        own = groups[0]
        train_on(own, next(k for k, r in enumerate(own) if record.kind(prompt, r) is None))
    assert record.boost() < 1.1


def test_rewarded_answers_are_read_safely_while_the_learner_adds_them() -> None:
    import sys
    import threading

    from hermes_rl_mcp.trainer.exploration import RewardedAnswers

    # The learner adds answers in its own thread while the sampler reads them; a thread switch
    # every microsecond makes the race that failed a sampling request ("OrderedDict mutated
    # during iteration") come within a few thousand reads.
    answers = RewardedAnswers(capacity=64)
    stop = threading.Event()

    def learner() -> None:
        k = 0
        while not stop.is_set():
            answers.add([k % 1000, 1, 2])
            k += 1

    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    thread = threading.Thread(target=learner)
    thread.start()
    try:
        for _ in range(3000):
            assert all(len(answer) == 3 for answer in answers.fitting(8, None))
    finally:
        stop.set()
        thread.join()
        sys.setswitchinterval(interval)
    assert len(answers) == 64

def test_exploration_offers_a_prompt_answers_that_scored_on_other_prompts() -> None:
    from hermes_rl_mcp.trainer.exploration import ExploredTurns, RewardedAnswers, explore

    model = small_model(np.float32)
    prompt = TOK.generation_prompt([{"role": "user", "content": "How many a's in abab?"}])
    rewarded = RewardedAnswers()
    for answer in ("2", "3", "many"):
        rewarded.add([*TOK.encode(answer), END])
    rng = np.random.default_rng(0)
    sampled = generate(model, prompt, n=16, max_tokens=3, temperature=1.0, rng=rng)
    record = ExploredTurns()
    explored = explore(
        model, prompt, sampled, share=0.0, max_tokens=3, temperature=1.0, constraint=None, rng=rng,
        record=record, rewarded=rewarded, rewarded_share=1.0,
    )
    assert {TOK.decode(s.token_ids) for s in explored} == {"2", "3"}  # "many" does not fit 3 tokens
    for sample in explored:
        np.testing.assert_allclose(sample.logprobs, model.completion_logprobs(prompt, sample.token_ids), atol=1e-4)
        assert record.kind(prompt, sample.token_ids) is not None  # so a low score does not push it down
    # the two kinds split the samples: prompt words first, then answers from elsewhere
    mixed = explore(
        model, prompt, sampled, share=0.5, max_tokens=3, temperature=1.0, constraint=None,
        rng=np.random.default_rng(1), rewarded=rewarded, rewarded_share=0.5, case_share=0.0, rewrite_share=0.0,
    )
    texts = [TOK.decode(s.token_ids) for s in mixed]
    assert set(texts) <= {"2", "3", "a", "s", "in"} and {"2", "3"} & set(texts) and {"a", "s", "in"} & set(texts)
    # nothing to offer yet, or greedy decoding: the samples stand
    assert explore(
        model, prompt, sampled, share=0.0, max_tokens=3, temperature=1.0, constraint=None, rng=rng,
        rewarded=RewardedAnswers(), rewarded_share=1.0,
    ) == sampled


def test_repeats_that_tell_prompts_apart_take_a_larger_step_than_those_every_prompt_shares() -> None:
    model = PolicyModel.initialise(TOK, hidden_size=8, seed=4)
    prompts = [TOK.generation_prompt([{"role": "user", "content": f"Is {letter} in plome?"}]) for letter in "mk"]
    feats = model.features(prompts, [[], []])
    scales = model.step_scales(feats)["U_same"][:, 0]
    telling = np.flatnonzero(feats.repeats[0] != feats.repeats[1])
    shared = np.flatnonzero((feats.repeats[0] == 1) & (feats.repeats[1] == 1))
    assert telling.size == 1 and shared.size > 0  # "m" against plome's "m"; the phrasing's own repeats
    assert scales[telling[0]] == REPEAT_STEP > 1.0
    assert np.all(scales[shared] == 1.0)


def test_input_rows_every_prompt_of_a_batch_holds_share_a_few_rows_worth_of_step() -> None:
    from hermes_rl_mcp.trainer.adam import Adam
    from hermes_rl_mcp.trainer.model import COMMON_ROWS_STEP

    model = PolicyModel.initialise(TOK, hidden_size=8, seed=4)
    pairs = ((1, 4), (3, 0), (5, 2))
    prompts = [TOK.generation_prompt([{"role": "user", "content": f"You are at {a}, the goal is at {b}. Move L or R."}]) for a, b in pairs]
    feats = model.features(prompts, [[] for _ in prompts])
    scales = model.step_scales(feats)["W_in"]
    held = [set(rows.tolist()) - {model.absent_row} for rows in feats.prompt_rows]
    common = sorted(set.intersection(*held))
    telling = sorted(set.union(*held) - set(common))  # the digits, and what moves with them
    assert len(common) > 10 * COMMON_ROWS_STEP and telling
    np.testing.assert_allclose(scales[common, 0], COMMON_ROWS_STEP / len(common), rtol=1e-6)
    assert np.all(scales[telling, 0] == 1.0)

    def moved(step_scales: dict[str, np.ndarray] | None) -> np.ndarray:
        """How far one Adam step that pushes every row the same way moves each unit's
        pre-activation through the shared rows."""
        table = {"W_in": model.params["W_in"].copy()}
        before = table["W_in"][common].sum(axis=0)
        Adam(table, learning_rate=0.01).step(table, {"W_in": np.ones_like(table["W_in"])}, step_scales)
        return before - table["W_in"][common].sum(axis=0)

    assert np.all(moved({"W_in": scales}) <= 0.01 * COMMON_ROWS_STEP * 1.001)
    assert np.all(moved(None) >= 0.01 * len(common) * 0.999)  # each row a full step: a hundred biases


def test_hidden_units_stay_active_when_what_every_prompt_shares_pushes_them_all_down() -> None:
    model = PolicyModel.initialise(TOK, hidden_size=16, seed=5)
    prompts = [TOK.generation_prompt([{"role": "user", "content": f"Is {w} a word? Answer yes or no."}]) for w in ("cat", "ox", "plum")]
    feats = model.features(prompts, [[] for _ in prompts])
    held = [set(rows.tolist()) - {model.absent_row} for rows in feats.prompt_rows]
    common = sorted(set.intersection(*held))
    assert len(common) > 50
    # what a run's common gradient did before the normalisation: the fixed phrasing's rows all
    # drift down, on every unit, each summed input ending 100 or more below zero
    push = np.random.default_rng(1).uniform(-4.0, -2.0, 16).astype(model.dtype)
    model.params["W_in"][common] += push
    active = (model.forward(feats).hidden > 0).sum(axis=1)
    assert active.min() >= 4, f"units active per position: {active.tolist()}; a silent unit gets no gradient"


def test_the_pointer_can_read_the_place_a_number_of_the_prompt_names() -> None:
    from hermes_rl_mcp.trainer.model import GAINS

    model = PolicyModel.initialise(TOK, hidden_size=8, seed=3)
    s = model.shape

    def marked(text: str) -> tuple[str, str]:
        """The characters of the message view at a place its numbers name: in their word, and
        whose word is at that place in the message."""
        prompt = TOK.generation_prompt([{"role": "user", "content": text}])
        feats = model.features([prompt], [[]])
        message = feats.slots[0, s.window : s.window + s.message_slots]
        indexed = feats.marked[0, s.window : s.window + s.message_slots]
        return tuple("".join(TOK.decode([t]) for t in message[indexed[:, k] > 0]) for k in range(2))

    assert marked("Letter 2 of house?") == ("efo", "2")
    assert marked("Letter 4 of house?") == ("ts", "house")  # "of" has no fourth letter
    assert marked("Word 3 of: ant bee cat") == ("rtet", "of")  # words are counted from the message's start
    assert marked("no numbers here") == ("", "")

    prompt = TOK.generation_prompt([{"role": "user", "content": "Letter 4 of planet?"}])
    feats = model.features([prompt], [[]])
    message = feats.slots[0, s.window : s.window + s.message_slots]
    n_slot = s.window + int(np.flatnonzero(message == TOK.encode("n")[0])[0])
    before = model.forward(feats).attention[0, n_slot]
    model.params["P_mark"][0] = 3.0 / GAINS["P_mark"]
    assert model.forward(feats).attention[0, n_slot] > 5 * before  # one weight reads "the fourth letter"


def test_the_pointer_can_pick_a_word_by_what_it_is() -> None:
    from hermes_rl_mcp.trainer.model import GAINS

    model = PolicyModel.initialise(TOK, hidden_size=8, seed=3)
    s = model.shape
    prompts = [TOK.generation_prompt([{"role": "user", "content": f"Which is a fruit: {a}, {b}?"}]) for a, b in (("van", "fig"), ("fig", "van"))]
    feats = model.features(prompts, [[], []])
    message = feats.slots[:, s.window : s.window + s.message_slots]
    keys = feats.word_keys[:, s.window : s.window + s.message_slots]
    f = TOK.encode("f")[0]
    assert TOK.decode(message[0, keys[0] >= 0]) == "Wiafvf"  # a key at each word's first character
    fig = keys[0, message[0] == f][-1]  # the row of "fig": the same in both prompts
    assert fig in keys[1]
    before = model.forward(feats).attention[:, s.window : s.window + s.message_slots]
    model.params["P_word"][fig] = 1.0 / GAINS["P_word"]
    after = model.forward(feats).attention[:, s.window : s.window + s.message_slots]
    for row in range(2):
        at = np.flatnonzero(keys[row] == fig)[0]
        assert after[row, at] > 2 * before[row, at]  # wherever "fig" stands, one weight reads it
    # once the turn has written a word's first letter, its key is at the word's second: "Bob",
    # begun, goes on as "Bob" and not as "Ben", where only the letter just written told them apart
    names = TOK.generation_prompt([{"role": "user", "content": "Who called: Ben or Bob?"}])
    feats = model.features([names, names], [TOK.encode("B"), TOK.encode("Bo")])
    message = feats.slots[:, s.window : s.window + s.message_slots]
    keys = feats.word_keys[:, s.window : s.window + s.message_slots]
    assert TOK.decode(message[0, keys[0] >= 0]) == "eo"  # one letter into the words "B" begins
    # "Ben" written backwards: "ne" begins no word, so no key pulls the reply forwards along one
    backwards = model.features([names], [TOK.encode("ne")]).word_keys[0, s.window : s.window + s.message_slots]
    assert (backwards < 0).all()
    assert (model.features([names], [TOK.encode("bO")]).word_keys == feats.word_keys[1]).all()  # whatever the case
    # and the same where the policy server samples (every row's reply as long as the others)
    sampled = model.features_for_rows(
        model.prompt_features([model.prompt_view(names)]), np.zeros(2, dtype=np.int64), np.asarray([TOK.encode("Bo"), TOK.encode("bO")])
    )
    assert (sampled.word_keys == feats.word_keys[1]).all()
    assert TOK.decode(message[1, keys[1] >= 0]) == "b"  # only in the word "Bo" begins
    bob = keys[0][keys[0] >= 0][-1]
    model.params["P_word"][bob] = 2.0 / GAINS["P_word"]
    attention = model.forward(feats).attention[:, s.window : s.window + s.message_slots]
    o, e = (int(np.flatnonzero(message[0] == TOK.encode(c)[0])[-1]) for c in ("o", "e"))
    assert attention[0, o] > 3 * attention[0, e]


def test_the_pointer_can_pick_a_word_by_its_place_in_an_earlier_message() -> None:
    from hermes_rl_mcp.trainer.model import GAINS, WORD_PLACES

    model = PolicyModel.initialise(TOK, hidden_size=8, seed=3)
    s = model.shape
    opening = slice(s.window + s.message_slots, s.window + 2 * s.message_slots)
    prompts = [
        TOK.generation_prompt([
            {"role": "user", "content": f"My list: {items}."}, {"role": "assistant", "content": "OK"},
            {"role": "user", "content": "The second?"},
        ])
        for items in ("tea, jam, rice", "sugar, milk, eggs")
    ]
    feats = model.features(prompts, [[], []])
    keys, text = feats.place_keys[:, opening], feats.slots[:, opening]
    # a key at each word's first character: the opening message's view (the third), its place
    assert TOK.decode(text[0, keys[0] >= 0]) == "Mltjr" and TOK.decode(text[1, keys[1] >= 0]) == "Mlsme"
    assert keys[0, keys[0] >= 0].tolist() == [2 * WORD_PLACES + k for k in range(5)]
    fourth = 2 * WORD_PLACES + 3
    before = model.forward(feats).attention[:, opening]
    model.params["P_place"][fourth] = 1.0 / GAINS["P_place"]
    after = model.forward(feats).attention[:, opening]
    for row, word in enumerate(("jam", "milk")):
        at = int(np.flatnonzero(keys[row] == fourth)[0])
        assert TOK.decode(text[row, at : at + len(word)]) == word
        assert after[row, at] > 2 * before[row, at]  # whatever the words' lengths, one weight reads the fourth


def test_phrases_are_words_joined_by_short_links_and_records_are_found_by_their_commas() -> None:
    from hermes_rl_mcp.trainer.phrases import find_records

    model = small_model(np.float32)

    def phrases(text: str) -> list[list[str]]:
        return [[text[a:b] for a, b in phrase] for phrase in model.phrases(TOK.encode(text))]

    assert phrases("Initials of: Laura Jean Patel? Write them") == [["Initials", "of"], ["Laura", "Jean", "Patel"], ["Write", "them"]]
    assert phrases("big_red-dog / pear, fig & kiwi") == [["big", "red", "dog", "pear", "fig", "kiwi"]]
    assert phrases("Call (415) 555-0132 or 415.555.0132 at 10:30. Then") == [
        ["Call", "415", "555", "0132", "or", "415", "555", "0132", "at", "10", "30"], ["Then"]
    ]
    assert phrases("one,   two") == [["one"], ["two"]]  # a long gap is layout, not a link

    def keys(text: str) -> list[list[list[str]]]:
        return [[[text[a:b] for a, b in spans] for spans in variants] for variants in (found.keys for found in find_records(text, 3))]

    assert keys("Heights: Ana 165 cm, Ben 172 cm, Cara 158 cm.") == [[["Ana", "Ben", "Cara"]]]
    assert keys("Race: Mia 12.4 s, Leo 11.9 s and Zoe 12.1 s. Who won?") == [[["Mia", "Leo", "Zoe"]]]
    assert keys("Trains: Leeds 10:30, York 9:15, Hull 11:05.") == [[["Leeds", "York", "Hull"]]]
    # the words before each item's number are offered too, where they are more than its first
    assert keys("Prices: milk $2.49, ice cream $1.99, eggs $3.20.") == [[["milk", "ice", "eggs"], ["milk", "ice cream", "eggs"]]]
    assert keys("Ann 7, Bob 9") == []  # two records are not a list
    assert keys("fig, kiwi, plum") == []  # items of one word are a plain list (``lists.py``)
    # an item without a number does not join items with one
    assert keys("After the game, Ann has 7, Bob has 9, Cy has 5") == [[["Ann", "Bob", "Cy"], ["Ann has", "Bob has", "Cy has"]]]
