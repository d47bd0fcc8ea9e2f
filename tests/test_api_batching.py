"""Batch formation of the trajectory API, through its HTTP interface (in-process ASGI)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from starlette.testclient import TestClient

from hermes_rl_mcp.api import create_app


def group(size: int, env_id: int | None = None, tag: int = 0, length: int = 3) -> dict[str, Any]:
    """A scored group whose first token identifies it (``tag``)."""
    tokens = [[tag] + [i + 1] * (length - 1) for i in range(size)]
    return {
        "tokens": tokens,
        "masks": [[-100] + row[1:] for row in tokens],
        "scores": [0.5 + 0.1 * i for i in range(size)],
        "inference_logprobs": [[1.0] + [-0.25] * (length - 1) for _ in range(size)],
        "env_id": env_id,
    }


def register(client: TestClient, batch_size: int, starting_step: int = 0) -> dict[str, Any]:
    reply = client.post(
        "/register",
        json={
            "batch_size": batch_size, "max_token_len": 64, "num_steps": 10, "checkpoint_dir": "ck",
            "save_checkpoint_interval": 5, "starting_step": starting_step,
            "wandb_group": "g", "wandb_project": "p",
        },
    )
    assert reply.status_code == 200, reply.text
    return reply.json()


def register_env(client: TestClient, group_size: int, **extra: Any) -> int:
    body = {"max_token_length": 64, "desired_name": "env", "weight": 1.0, "group_size": group_size, **extra}
    reply = client.post("/register-env", json=body)
    assert reply.status_code == 200, reply.text
    assert reply.json()["status"] == "success", reply.json()
    return reply.json()["env_id"]


def post(client: TestClient, payload: dict[str, Any]) -> dict[str, Any]:
    reply = client.post("/scored_data", json=payload)
    assert reply.status_code == 200, reply.text
    return reply.json()


def batch(client: TestClient) -> list[dict[str, Any]] | None:
    reply = client.get("/batch")
    assert reply.status_code == 200, reply.text
    return reply.json()["batch"]


def tags(groups: list[dict[str, Any]]) -> list[int]:
    return [g["tokens"][0][0] for g in groups]


@pytest.fixture()
def client() -> TestClient:
    return TestClient(create_app())


def test_batches_hold_exactly_batch_size_sequences_in_arrival_order(client: TestClient) -> None:
    register(client, batch_size=8)
    env = register_env(client, group_size=4)
    for tag in range(5):
        post(client, group(4, env, tag))
    first = batch(client)
    assert first is not None and tags(first) == [0, 1]
    assert sum(len(g["tokens"]) for g in first) == 8
    second = batch(client)
    assert second is not None and tags(second) == [2, 3]
    assert batch(client) is None  # 4 sequences left, batch_size is 8
    assert client.get("/status").json() == {"current_step": 2, "queue_size": 1}


def test_delivered_groups_carry_every_field_as_atropos_does(client: TestClient) -> None:
    register(client, batch_size=2)
    env = register_env(client, group_size=2)
    sent = group(2, env, tag=7)
    post(client, sent)
    (delivered,) = batch(client) or []
    for name in ("tokens", "masks", "scores", "inference_logprobs", "env_id"):
        assert delivered[name] == sent[name]
    for name in ("advantages", "ref_logprobs", "messages", "generation_params", "overrides",
                 "group_overrides", "images", "distill_token_ids", "distill_logprobs"):
        assert delivered[name] is None


def test_groups_are_never_split_and_mixed_sizes_fill_exactly(client: TestClient) -> None:
    register(client, batch_size=8)
    big = register_env(client, group_size=4)
    small = register_env(client, group_size=2)
    post(client, group(4, big, tag=1))
    post(client, group(4, big, tag=2))  # 8 queued but only as 4 + 4
    post(client, group(2, small, tag=3))
    first = batch(client)
    assert first is not None and tags(first) == [1, 2]
    assert batch(client) is None  # a lone group of 2 never becomes part of a batch of 8 by splitting
    post(client, group(4, big, tag=4))
    post(client, group(2, small, tag=5))
    second = batch(client)
    assert second is not None and sorted(tags(second)) == [3, 4, 5]
    assert all(len(g["tokens"]) in (2, 4) for g in second)


def test_oldest_groups_that_fit_are_taken_when_the_head_of_the_queue_does_not(client: TestClient) -> None:
    register(client, batch_size=6)
    a = register_env(client, group_size=4)
    b = register_env(client, group_size=2)
    post(client, group(4, a, tag=1))
    post(client, group(4, a, tag=2))
    assert batch(client) is None  # 4 + 4 overshoots 6
    post(client, group(2, b, tag=3))
    delivered = batch(client)
    assert delivered is not None and tags(delivered) == [1, 3]
    assert client.get("/status").json()["queue_size"] == 1


def test_smaller_groups_are_buffered_until_they_add_up_to_group_size(client: TestClient) -> None:
    register(client, batch_size=8)
    env = register_env(client, group_size=8)
    assert post(client, group(3, env, tag=1)) == {"status": "buffered", "buffer_size": 3}
    assert post(client, group(3, env, tag=2)) == {"status": "buffered", "buffer_size": 6}
    assert client.get("/status").json()["queue_size"] == 0
    assert batch(client) is None
    # 3 + 3 + 5 cannot make 8, but 3 + 5 can: the oldest combination is released.
    assert post(client, group(5, env, tag=3)) == {"status": "buffered", "buffer_size": 3}
    delivered = batch(client)
    assert delivered is not None and tags(delivered) == [1, 3]
    assert [len(g["tokens"]) for g in delivered] == [3, 5]


def test_combined_odd_groups_are_batched_like_a_full_group(client: TestClient) -> None:
    # Atropos queues combined pieces separately, where a 3 and a 5 can never pack into 8.
    register(client, batch_size=16)
    env = register_env(client, group_size=8)
    post(client, group(8, env, tag=1))
    post(client, group(3, env, tag=2))
    post(client, group(5, env, tag=3))
    delivered = batch(client)
    assert delivered is not None and tags(delivered) == [1, 2, 3]


def test_group_larger_than_group_size_is_refused_with_a_reason(client: TestClient) -> None:
    register(client, batch_size=8)
    env = register_env(client, group_size=4)
    reply = client.post("/scored_data", json=group(6, env))
    assert reply.status_code == 422
    assert "group_size 4" in reply.json()["detail"]
    assert client.get("/status").json()["queue_size"] == 0


def test_unknown_env_id_is_refused_but_groups_without_env_id_are_queued(client: TestClient) -> None:
    register(client, batch_size=2)
    reply = client.post("/scored_data", json=group(2, env_id=3))
    assert reply.status_code == 422 and "not registered" in reply.json()["detail"]
    assert post(client, group(2, None, tag=9)) == {"status": "received"}
    delivered = batch(client)
    assert delivered is not None and tags(delivered) == [9]


def test_minimum_allocation_reserves_a_share_of_every_batch(client: TestClient) -> None:
    register(client, batch_size=8)
    plenty = register_env(client, group_size=2)
    scarce = register_env(client, group_size=2, min_batch_allocation=0.5)
    for tag in range(1, 7):
        post(client, group(2, plenty, tag=tag))
    post(client, group(2, scarce, tag=100))
    # Without the minimum the first four groups of `plenty` would form a batch; the scarce env
    # is owed 4 of the 8 sequences and has only 2 queued, so the trainer waits.
    assert batch(client) is None
    post(client, group(2, scarce, tag=101))
    delivered = batch(client)
    assert delivered is not None
    assert tags(delivered) == [1, 2, 100, 101]
    by_env: dict[int, int] = {}
    for g in delivered:
        by_env[g["env_id"]] = by_env.get(g["env_id"], 0) + len(g["tokens"])
    assert by_env == {plenty: 4, scarce: 4}


def test_minimum_allocation_of_a_disconnected_env_is_released(client: TestClient) -> None:
    register(client, batch_size=4)
    plenty = register_env(client, group_size=2)
    gone = register_env(client, group_size=2, min_batch_allocation=0.5)
    post(client, group(2, plenty, tag=1))
    post(client, group(2, plenty, tag=2))
    assert batch(client) is None
    assert client.post("/disconnect-env", json={"env_id": gone}).json() == {"status": "success"}
    delivered = batch(client)
    assert delivered is not None and tags(delivered) == [1, 2]


def test_status_env_weighting_and_queue_figures(client: TestClient) -> None:
    register(client, batch_size=8)
    a = register_env(client, group_size=2, weight=3.0)
    b = register_env(client, group_size=4, weight=1.0, min_batch_allocation=0.25)
    post(client, group(2, a, tag=1))
    post(client, group(2, a, tag=2))
    post(client, group(4, b, tag=3))
    status_a = client.request("GET", "/status-env", content=json.dumps({"env_id": a})).json()
    assert status_a["env_weight"] == pytest.approx(0.75)  # 3 of 4 weight units, equal max lengths
    assert status_a["unallocated_fraction"] == pytest.approx(0.75)
    assert status_a["self_queue_size"] == 2  # 4 own sequences in groups of 2
    assert status_a["max_group_size"] == 4
    # Other envs' data counts, less what their minimum reserves: 4 - int(8 * 0.25) = 2 more.
    assert status_a["queue_size"] == 3
    status_b = client.get(f"/status-env?env_id={b}").json()
    assert status_b["env_weight"] == pytest.approx(0.25)
    assert status_b["self_queue_size"] == 1
    assert status_b["queue_size"] == 2  # own 4 + env a's 4 = 8 sequences in groups of 4
    assert status_b["current_step"] == 0


def test_status_env_weight_is_floored_and_disconnected_envs_drop_out(client: TestClient) -> None:
    register(client, batch_size=8)
    heavy = register_env(client, group_size=2, weight=1000.0)
    light = register_env(client, group_size=2, weight=0.0)
    assert client.get(f"/status-env?env_id={light}").json()["env_weight"] == pytest.approx(0.01)
    client.post("/disconnect-env", json={"env_id": light})
    assert client.get(f"/status-env?env_id={heavy}").json()["env_weight"] == pytest.approx(1.0)


def test_step_counter_advances_once_per_delivered_batch(client: TestClient) -> None:
    register(client, batch_size=2, starting_step=5)
    env = register_env(client, group_size=2)
    for tag in range(3):
        post(client, group(2, env, tag))
    assert client.get("/status").json()["current_step"] == 5
    batch(client)
    assert client.get("/status").json() == {"current_step": 6, "queue_size": 2}
    batch(client)
    batch(client)
    assert batch(client) is None
    assert client.get("/status").json() == {"current_step": 8, "queue_size": 0}
    assert client.get(f"/status-env?env_id={env}").json()["current_step"] == 8


def test_scored_data_list_reports_buffering_and_is_all_or_nothing(client: TestClient) -> None:
    register(client, batch_size=4)
    env = register_env(client, group_size=4)
    reply = client.post("/scored_data_list", json=[group(4, env, 1), group(1, env, 2), group(2, env, 3)])
    assert reply.json() == {"status": "received", "groups_processed": 3, "buffered": 2, "last_buffer_size": 3}
    bad = group(4, env, 4)
    bad["scores"] = ["high"] * 4
    reply = client.post("/scored_data_list", json=[group(4, env, 5), bad])
    assert reply.status_code == 422
    assert "body[1].scores[0]" in reply.json()["detail"]
    assert client.get("/status").json()["queue_size"] == 1  # nothing of the refused list was queued


def test_reset_data_clears_everything(client: TestClient) -> None:
    register(client, batch_size=2, starting_step=3)
    env = register_env(client, group_size=4)
    post(client, group(4, env, 1))
    post(client, group(1, env, 2))
    batch(client)
    reply = client.get("/reset_data")
    assert reply.status_code == 200 and reply.text == "Reset successful"
    assert client.get("/status").json() == {"current_step": 0, "queue_size": 0}
    assert client.get("/info").json() == {"batch_size": -1, "max_token_len": -1}
    assert client.get("/wandb_info").json() == {"group": None, "project": None}
    assert client.get(f"/status-env?env_id={env}").status_code == 404
    assert client.get("/latest_example").json()["tokens"] == []
    # Environments must wait for a trainer again, then start over at id 0 with empty buffers.
    assert client.post("/register-env", json={"max_token_length": 8, "desired_name": "e", "weight": 1,
                                              "group_size": 4}).json() == {"status": "wait for trainer to start"}
    register(client, batch_size=4)
    assert register_env(client, group_size=4) == 0
    assert post(client, group(3, 0, 9)) == {"status": "buffered", "buffer_size": 3}
