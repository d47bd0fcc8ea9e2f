"""The policy server over real HTTP on loopback."""

from __future__ import annotations

import asyncio
import socket
import threading
import time
from collections.abc import Iterator

import httpx
import numpy as np
import pytest
import uvicorn

from hermes_rl_mcp.trainer.model import PolicyModel
from hermes_rl_mcp.trainer.policy_server import PolicyHolder, SamplingBatches, build_app
from hermes_rl_mcp.trainer.sampling import SampleJob
from hermes_rl_mcp.trainer.tokenizer import END, CharTokenizer

TOK = CharTokenizer()


@pytest.fixture(scope="module")
def served() -> Iterator[tuple[str, PolicyHolder]]:
    model = PolicyModel.initialise(TOK, hidden_size=32, seed=5)
    holder = PolicyHolder(model=model, step=7, rng=np.random.default_rng(0))
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(build_app(holder), log_level="warning", lifespan="off"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started and time.monotonic() < deadline:
        time.sleep(0.01)
    assert server.started
    yield f"http://127.0.0.1:{port}", holder
    server.should_exit = True
    thread.join(timeout=5)
    sock.close()


def test_health_and_models(served: tuple[str, PolicyHolder]) -> None:
    base, _ = served
    health = httpx.get(f"{base}/health")
    assert health.status_code == 200 and health.json() == {"status": "ok", "step": 7}
    assert httpx.get(f"{base}/v1/models").json()["data"][0]["id"] == "hermes-rl-local"


def test_chat_choices_carry_token_ids_and_the_models_own_logprobs(served: tuple[str, PolicyHolder]) -> None:
    base, holder = served
    messages = [{"role": "user", "content": "plane"}]
    body = {"model": "hermes-rl-local", "messages": messages, "n": 5, "max_tokens": 4, "temperature": 0.8, "logprobs": True}
    data = httpx.post(f"{base}/v1/chat/completions", json=body).json()
    assert data["object"] == "chat.completion"
    prompt_ids = data["prompt_token_ids"]
    assert prompt_ids == TOK.generation_prompt(messages)
    assert len(data["choices"]) == 5
    for choice in data["choices"]:
        ids = choice["token_ids"]
        logprobs = [entry["logprob"] for entry in choice["logprobs"]["content"]]
        assert 1 <= len(ids) <= 4 and len(logprobs) == len(ids)
        if choice["finish_reason"] == "stop":
            assert ids[-1] == END and TOK.decode(ids) == choice["message"]["content"]
        else:
            assert choice["finish_reason"] == "length" and len(ids) == 4
        own = holder.model.completion_logprobs(prompt_ids, ids, temperature=0.8)
        np.testing.assert_allclose(logprobs, own, atol=1e-4)
    assert data["usage"]["completion_tokens"] == sum(len(c["token_ids"]) for c in data["choices"])


def test_chat_prompt_extends_with_the_reply(served: tuple[str, PolicyHolder]) -> None:
    base, _ = served
    first = [{"role": "user", "content": "at 2 goal 5"}]
    reply = httpx.post(f"{base}/v1/chat/completions", json={"messages": first, "max_tokens": 3}).json()
    choice = reply["choices"][0]
    follow = first + [choice["message"], {"role": "user", "content": "at 3 goal 5"}]
    again = httpx.post(f"{base}/v1/chat/completions", json={"messages": follow, "max_tokens": 1}).json()
    known = reply["prompt_token_ids"] + choice["token_ids"]
    assert again["prompt_token_ids"][: len(known)] == known


def test_text_completion_with_stop_and_seed(served: tuple[str, PolicyHolder]) -> None:
    base, _ = served
    body = {"prompt": "hello", "n": 8, "max_tokens": 6, "temperature": 1.5, "seed": 11, "stop": [chr(c) for c in range(97, 123)]}
    first = httpx.post(f"{base}/v1/completions", json=body).json()
    second = httpx.post(f"{base}/v1/completions", json=body).json()
    assert first["object"] == "text_completion" and first["prompt_token_ids"] == TOK.encode("hello")
    assert [c["token_ids"] for c in first["choices"]] == [c["token_ids"] for c in second["choices"]]  # same seed
    for choice in first["choices"]:
        generated = TOK.decode(choice["token_ids"])
        assert len(choice["logprobs"]["token_logprobs"]) == len(choice["token_ids"])
        assert not any("a" <= ch <= "z" for ch in choice["text"])  # the stop string is cut from the text
        if generated and "a" <= generated[-1] <= "z":
            assert choice["finish_reason"] == "stop" and choice["text"] == generated[:-1]


def test_concurrent_requests_share_batches_and_each_gets_its_own_answer(served: tuple[str, PolicyHolder]) -> None:
    """A multi-turn environment sends its episodes' turns at once: the server samples them
    together, and every request still gets its own n, budget, stop and constraint."""
    base, holder = served
    before_batches, before_requests = holder.batches.batches_sampled, holder.batches.requests_sampled

    def body(i: int) -> dict:
        request = {"messages": [{"role": "user", "content": f"You are at {i % 6}, the goal is at {i % 5}."}]}
        request |= {"n": 1 + i % 3, "max_tokens": 1 + i % 4, "temperature": 1.0}
        if i % 4 == 1:
            request["guided_choice"] = ["L", "R"]
        if i % 4 == 2:
            request["stop"] = ["a", "e"]
        return request

    async def send_all() -> list[dict]:
        async with httpx.AsyncClient(base_url=base, timeout=30) as client:
            responses = await asyncio.gather(*(client.post("/v1/chat/completions", json=body(i)) for i in range(24)))
        return [response.json() for response in responses]

    answers = asyncio.run(send_all())
    for i, data in enumerate(answers):
        request = body(i)
        assert data["prompt_token_ids"] == TOK.generation_prompt(request["messages"])
        assert len(data["choices"]) == request["n"]
        for choice in data["choices"]:
            assert 1 <= len(choice["token_ids"]) <= request["max_tokens"]
            if "guided_choice" in request:
                assert choice["message"]["content"] in ("L", "R")  # its budget, 2, holds a letter and the end
            if "stop" in request:
                assert "a" not in choice["message"]["content"] and "e" not in choice["message"]["content"]
    requests = holder.batches.requests_sampled - before_requests
    batches = holder.batches.batches_sampled - before_batches
    assert requests == 24 and batches < requests, (batches, requests)


def test_a_request_that_fails_in_a_batch_fails_alone() -> None:
    model = PolicyModel.initialise(TOK, hidden_size=16, seed=1)
    batches = SamplingBatches(lambda _evaluation: model)
    good = TOK.generation_prompt([{"role": "user", "content": "abc"}])
    broken = [*good[:-1], TOK.vocab_size + 5, good[-1]]  # a token id no vocabulary has

    async def sample_three() -> list:
        jobs = [SampleJob(prompt, 2, 3, np.random.default_rng(0)) for prompt in (good, broken, good)]
        return await asyncio.gather(*(batches.sample(job, 1.0, 1.0) for job in jobs), return_exceptions=True)

    first, failed, third = asyncio.run(sample_three())
    assert isinstance(failed, IndexError)
    for answer in (first, third):
        snapshot, samples = answer
        assert snapshot is model and len(samples) == 2
    assert batches.requests_sampled == 3 and batches.batches_sampled == 1


@pytest.mark.parametrize(
    ("path", "body", "reason"),
    [
        ("/v1/chat/completions", {"messages": []}, "messages"),
        ("/v1/chat/completions", {"messages": [{"role": "wizard", "content": "x"}]}, "valid roles"),
        ("/v1/chat/completions", {"messages": [{"role": "user", "content": "x"}], "n": 0}, "n"),
        ("/v1/completions", {"prompt": "x", "max_tokens": -3}, "max_tokens"),
        ("/v1/completions", {"prompt": "x", "temperature": "hot"}, "temperature"),
        ("/v1/completions", {"prompt": ["a", "b"]}, "one prompt per request"),
        ("/v1/completions", {"n": 2}, "prompt"),
        ("/v1/completions", {"prompt": "x", "guided_choice": []}, "guided_choice"),
        ("/v1/completions", {"prompt": "x", "guided_choice": ["ok", "\u00e9t\u00e9"]}, "cannot produce"),
        ("/v1/chat/completions", {"messages": [{"role": "user", "content": "x"}], "guided_choice": "yes"}, "guided_choice"),
    ],
)
def test_bad_requests_get_a_4xx_with_the_reason(served: tuple[str, PolicyHolder], path: str, body: dict, reason: str) -> None:
    base, _ = served
    response = httpx.post(f"{base}{path}", json=body)
    assert response.status_code == 400
    assert reason in response.json()["error"]["message"]


def test_non_json_body_is_refused(served: tuple[str, PolicyHolder]) -> None:
    base, _ = served
    response = httpx.post(f"{base}/v1/completions", content=b"{not json", headers={"content-type": "application/json"})
    assert response.status_code == 400 and "JSON" in response.json()["error"]["message"]


def test_the_sampling_endpoints_answer_a_wrong_method_or_path_with_what_exists(served: tuple[str, PolicyHolder]) -> None:
    """The sampling endpoints skip Starlette's routing for speed; the routes still answer the rest."""
    base, _ = served
    wrong_method = httpx.get(f"{base}/v1/chat/completions")
    assert wrong_method.status_code == 405 and wrong_method.headers["allow"] == "POST"
    assert httpx.post(f"{base}/v1/chat/completion", json={}).status_code == 404
    body = {"messages": [{"role": "user", "content": "hi"}], "n": 2, "max_tokens": 3}
    answer = httpx.post(f"{base}/v1/chat/completions", json=body)
    assert answer.status_code == 200 and answer.headers["content-type"] == "application/json"
    assert len(answer.json()["choices"]) == 2


def test_a_published_step_is_served(served: tuple[str, PolicyHolder]) -> None:
    base, holder = served
    model = holder.model
    holder.publish(model, 8)
    assert httpx.get(f"{base}/health").json()["step"] == 8
    holder.publish(model, 7)


def test_an_evaluation_is_answered_by_the_published_average_and_training_by_the_latest_weights(served: tuple[str, PolicyHolder]) -> None:
    """A run publishes its latest weights for training samples and their average for the
    requests the SDK marks as an evaluation; each answer carries its own model's logprobs."""
    from hermes_rl_mcp.sdk.env_types import PURPOSE_HEADER

    base, holder = served
    latest, before = holder.model, holder.step
    average = PolicyModel.initialise(TOK, hidden_size=32, seed=9)
    holder.publish(latest, before + 1, evaluated=average)
    messages = [{"role": "user", "content": "plane"}]
    body = {"messages": messages, "n": 4, "max_tokens": 4, "temperature": 0.8, "logprobs": True}
    try:
        for headers, model, other in (({}, latest, average), ({PURPOSE_HEADER: "evaluation"}, average, latest)):
            data = httpx.post(f"{base}/v1/chat/completions", json=body, headers=headers).json()
            for choice in data["choices"]:
                ids = choice["token_ids"]
                logprobs = [entry["logprob"] for entry in choice["logprobs"]["content"]]
                np.testing.assert_allclose(logprobs, model.completion_logprobs(data["prompt_token_ids"], ids, temperature=0.8), atol=1e-4)
                assert not np.allclose(logprobs, other.completion_logprobs(data["prompt_token_ids"], ids, temperature=0.8), atol=1e-4)
    finally:
        holder.publish(latest, before)


def test_guided_choice_answers_only_the_allowed_strings(served: tuple[str, PolicyHolder]) -> None:
    base, _ = served
    choices = ["-2", "16", "3"]
    body = {"messages": [{"role": "user", "content": "7-9"}], "n": 24, "max_tokens": 4, "temperature": 1.5, "guided_choice": choices}
    data = httpx.post(f"{base}/v1/chat/completions", json=body).json()
    texts = [choice["message"]["content"] for choice in data["choices"]]
    assert set(texts) <= set(choices) and len(set(texts)) >= 2
    assert all(choice["finish_reason"] == "stop" for choice in data["choices"])


def test_a_training_request_explores_prompt_words_and_an_evaluation_never_does(served: tuple[str, PolicyHolder]) -> None:
    """The run's policy server replaces sampled completions by prompt words; the SDK marks the
    requests an environment makes while it evaluates, and those are the policy's own samples."""
    import anyio

    from hermes_rl_mcp.sdk.env_types import APIServerConfig
    from hermes_rl_mcp.sdk.policy_client import PolicyClient, evaluating
    from hermes_rl_mcp.trainer.exploration import ExploredTurns

    base, holder = served
    holder.explore_prompt_words, holder.explored = 1.0, ExploredTurns()
    messages = [{"role": "user", "content": "Is 47 even or odd?"}]
    client = PolicyClient([APIServerConfig(model_name="hermes-rl-local", base_url=f"{base}/v1", api_key="x")])

    async def sample() -> list[str]:
        group = await client.chat(messages, n=8, max_tokens=6, temperature=1.0)
        return [completion.text for completion in group.completions]

    async def evaluation() -> list[str]:
        with evaluating():
            async with anyio.create_task_group() as tasks:  # requests from tasks started inside count too
                found: list[str] = []

                async def one() -> None:
                    found.extend(await sample())

                tasks.start_soon(one)
        return found

    async def both() -> tuple[list[str], int, list[str]]:  # one event loop: the client pools connections
        trained = await sample()
        explored = len(holder.explored)
        return trained, explored, await evaluation()

    try:
        trained, explored_in_training, evaluated = anyio.run(both)
        words = {"Is", "47", "even", "or", "odd"}
        # two words joined by a space, or by nothing (rare pairs, once words are counted), that fit
        # 6 tokens with the end token
        phrases = {f"{a}{join}{b}" for a in words for b in words for join in ("", " ") if len(a + join + b) <= 5}
        explorable = words | phrases | {"94"}  # 94: the number with itself, a sum of the prompt's numbers
        # and each of those in another case: all lowercase, all capitals, swapped, the first letter swapped
        explorable |= {case for text in explorable for case in (text.lower(), text.upper(), text.swapcase(), text[:1].swapcase() + text[1:])}
        # and two to four of the phrase's words in a row: their initials, reversed, or joined by
        # nothing as they are, in lowercase or in capitals
        order = ["Is", "47", "even", "or", "odd"]
        runs = [order[at : at + size] for size in (2, 3, 4) for at in range(len(order) - size + 1)]
        explorable |= {"".join(word[0] for word in run) for run in runs} | {" ".join(run[::-1]) for run in runs}
        explorable |= {case("".join(run)) for run in runs for case in (str, str.lower, str.upper)}
        assert set(trained) <= explorable and explored_in_training > 0
        assert len(evaluated) == 8 and len(holder.explored) == explored_in_training
        assert not set(evaluated) <= explorable  # the untrained policy's own samples
    finally:
        holder.explore_prompt_words, holder.explored = 0.0, None


def test_a_training_request_explores_answers_that_scored_on_other_prompts(served: tuple[str, PolicyHolder]) -> None:
    from hermes_rl_mcp.trainer.exploration import ExploredTurns, RewardedAnswers

    base, holder = served
    rewarded = RewardedAnswers()
    rewarded.add([*holder.model.tokenizer.encode("42"), holder.model.tokenizer.end_id])
    holder.explore_rewarded, holder.rewarded, holder.explored = 1.0, rewarded, ExploredTurns()
    try:
        body = {"messages": [{"role": "user", "content": "How old is the tree?"}], "n": 6, "max_tokens": 4, "temperature": 1.0}
        data = httpx.post(f"{base}/v1/chat/completions", json=body).json()
        assert [choice["message"]["content"] for choice in data["choices"]] == ["42"] * 6
        assert len(holder.explored) == 1  # one prompt, one answer: shielded from a low score
        greedy = httpx.post(f"{base}/v1/chat/completions", json={**body, "temperature": 0}).json()
        assert [choice["message"]["content"] for choice in greedy["choices"]] != ["42"] * 6
    finally:
        holder.explore_rewarded, holder.rewarded, holder.explored = 0.0, None, None
