"""Wire protocol of the trajectory API: registration, encodings, bad input, reference schema."""

from __future__ import annotations

import gzip
import json
import logging
import random
from typing import Any

import pytest
from pydantic import ValidationError
from starlette.testclient import TestClient

from hermes_rl_mcp.api import create_app
from hermes_rl_mcp.api.lexer import int_matrix_row_lengths, number_matrix_row_lengths
from hermes_rl_mcp.api.models import ScoredData, WireError
from hermes_rl_mcp.api.payload import parse_scored_group

REGISTRATION = {
    "batch_size": 4, "max_token_len": 32, "num_steps": 7, "checkpoint_dir": "ckpt",
    "save_checkpoint_interval": 3, "starting_step": 0, "wandb_group": "grp", "wandb_project": "proj",
}


def group(size: int = 2, env_id: int | None = 0) -> dict[str, Any]:
    return {
        "tokens": [[5, 6, 7]] * size, "masks": [[-100, 6, 7]] * size, "scores": [1.0, -0.5][:size] * (size // 2 or 1),
        "inference_logprobs": [[1.0, -0.1, -2.5e-3]] * size, "env_id": env_id,
    }


@pytest.fixture()
def client() -> TestClient:
    client = TestClient(create_app())
    assert client.post("/register", json=REGISTRATION).status_code == 200
    reply = client.post("/register-env", json={"max_token_length": 32, "desired_name": "rev", "weight": 1,
                                               "group_size": 2, "min_batch_allocation": None})
    assert reply.json()["env_id"] == 0
    return client


def test_registration_round_trip_matches_atropos_fields() -> None:
    client = TestClient(create_app())
    assert client.get("/health").status_code == 200
    assert client.get("/info").json() == {"batch_size": -1, "max_token_len": -1}
    waiting = client.post("/register-env", json={"max_token_length": 32, "desired_name": "rev", "weight": 1, "group_size": 2})
    assert waiting.json() == {"status": "wait for trainer to start"}
    reply = client.post("/register", json=REGISTRATION).json()
    assert isinstance(reply["uuid"], int) and reply["reregistered"] is False
    assert client.get("/info").json() == {"batch_size": 4, "max_token_len": 32}
    assert client.get("/wandb_info").json() == {"group": "grp", "project": "proj"}
    first = client.post("/register-env", json={"max_token_length": 32, "desired_name": "rev", "weight": 1, "group_size": 2})
    assert first.json() == {
        "status": "success", "env_id": 0, "wandb_name": "rev_0", "checkpoint_dir": "ckpt",
        "starting_step": 0, "checkpoint_interval": 3, "num_steps": 7,
    }
    second = client.post("/register-env", json={"max_token_length": 32, "desired_name": "rev", "weight": 1, "group_size": 2})
    assert (second.json()["env_id"], second.json()["wandb_name"]) == (1, "rev_1")
    unnamed = client.post("/register-env", json={"max_token_length": 32, "desired_name": None, "weight": None, "group_size": 2})
    assert unnamed.json()["wandb_name"] == "env_0"


def test_second_register_takes_effect_and_keeps_envs_and_queued_data(client: TestClient) -> None:
    client.post("/scored_data", json=group())
    client.post("/scored_data", json=group())
    client.post("/scored_data", json=group())
    assert client.get("/batch").json()["batch"] is not None  # step 1, one group left
    again = dict(REGISTRATION, batch_size=2, starting_step=40, wandb_project="other")
    reply = client.post("/register", json=again).json()
    assert reply["reregistered"] is True
    assert client.get("/info").json()["batch_size"] == 2
    assert client.get("/wandb_info").json()["project"] == "other"
    assert client.get("/status").json() == {"current_step": 40, "queue_size": 1}
    delivered = client.get("/batch").json()["batch"]
    assert delivered is not None and sum(len(g["tokens"]) for g in delivered) == 2
    assert client.get("/status").json()["current_step"] == 41
    assert client.post("/scored_data", json=group()).json() == {"status": "received"}  # env 0 still known


def test_batch_before_register_keeps_the_trainer_polling() -> None:
    reply = TestClient(create_app()).get("/batch")
    assert reply.status_code == 200
    assert reply.json()["batch"] is None and "register" in reply.json()["message"].lower()


def test_gzip_bodies_are_accepted(client: TestClient) -> None:
    body = gzip.compress(json.dumps(group()).encode())
    reply = client.post("/scored_data", content=body, headers={"Content-Encoding": "gzip", "Content-Type": "application/json"})
    assert reply.json() == {"status": "received"}
    listed = gzip.compress(json.dumps([group(), group()]).encode())
    reply = client.post("/scored_data_list", content=listed, headers={"Content-Encoding": "gzip"})
    assert reply.json() == {"status": "received", "groups_processed": 2}
    reply = client.post("/register", content=gzip.compress(json.dumps(REGISTRATION).encode()), headers={"Content-Encoding": "gzip"})
    assert reply.status_code == 200
    delivered = client.get("/batch").json()["batch"]
    assert delivered[0]["tokens"] == group()["tokens"]


@pytest.mark.parametrize(
    ("path", "body", "headers", "status", "reason"),
    [
        ("/scored_data", b'{"tokens": [[1, 2]', {}, 400, "not valid JSON"),
        ("/scored_data", b"", {}, 400, "empty"),
        ("/scored_data", b"\xff\xfe", {}, 400, "UTF-8"),
        ("/scored_data", b"not gzip", {"Content-Encoding": "gzip"}, 400, "gzip"),
        ("/scored_data", b"{}", {"Content-Encoding": "br"}, 415, "gzip"),
        ("/scored_data", b"[1, 2]", {}, 422, "JSON object"),
        ("/scored_data", b'{"masks": [[1]], "scores": [1]}', {}, 422, "tokens"),
        ("/scored_data", b'{"tokens": [[1, "2"]], "masks": [[1, 2]], "scores": [1]}', {}, 422, "tokens[0][1] must be an integer, got string"),
        ("/scored_data", b'{"tokens": [[1, 2.5]], "masks": [[1, 2]], "scores": [1]}', {}, 422, "tokens[0][1] must be an integer, got number"),
        ("/scored_data", b'{"tokens": [[1, true]], "masks": [[1, 2]], "scores": [1]}', {}, 422, "got boolean"),
        ("/scored_data", b'{"tokens": [1, 2], "masks": [[1, 2]], "scores": [1]}', {}, 422, "tokens[0] must be an array"),
        ("/scored_data", b'{"tokens": [[1, 2]], "masks": [[1]], "scores": [1]}', {}, 422, "masks[0] has 1 entries"),
        ("/scored_data", b'{"tokens": [[1, 2]], "masks": [[1, 2]], "scores": [1, 2]}', {}, 422, "one score per sequence"),
        ("/scored_data", b'{"tokens": [], "masks": [], "scores": []}', {}, 422, "at least one sequence"),
        ("/scored_data", b'{"tokens": [[1]], "masks": [[1]], "scores": [NaN]}', {}, 400, "NaN"),
        ("/scored_data", b'{"tokens": [[1]], "masks": [[1]], "scores": [1], "env_id": "a"}', {}, 422, "env_id"),
        ("/scored_data", b'{"tokens": [[1]], "masks": [[1]], "scores": [1], "messages": [[{"role": "user"}]]}', {}, 422, "content"),
        ("/scored_data", b'{"tokens": [[1]], "masks": [[1]], "scores": [1], "inference_logprobs": [[1], [2]]}', {}, 422, "inference_logprobs has 2 rows"),
        ("/scored_data", b'{"tokens": [[01]], "masks": [[1]], "scores": [1]}', {}, 400, "not valid JSON"),
        ("/scored_data", b'{"tokens": [[1, -01]], "masks": [[1, 1]], "scores": [1]}', {}, 400, "not valid JSON"),
        ("/scored_data", b'{"tokens": [[1],[2,00]], "masks": [[1],[1,1]], "scores": [1,1]}', {}, 400, "not valid JSON"),
        ("/scored_data", b'{"tokens": [[1]], "masks": [[1]], "scores": [1], "inference_logprobs": [[1.5.5]]}', {}, 400, "not valid JSON"),
        ("/scored_data", b'{"tokens": [[1]], "masks": [[1]], "scores": [1], "inference_logprobs": [[1e5e5]]}', {}, 400, "not valid JSON"),
        ("/scored_data", b'{"tokens": [[1], 2], "masks": [[1]], "scores": [1]}', {}, 422, "tokens[1] must be an array"),
        ("/scored_data_list", b'{"tokens": [[1]]}', {}, 422, "JSON array"),
        ("/scored_data_list", b'[{"tokens": [[1]], "masks": [[1]], "scores": [1]},]', {}, 400, "not valid JSON"),
        ("/register", b'{"batch_size": "many"}', {}, 422, "batch_size"),
        ("/register", b'{"batch_size": 0}', {}, 422, "greater than 0"),
        ("/register-env", b'{"group_size": 4}', {}, 422, "max_token_length"),
        ("/disconnect-env", b'{"env_id": 99}', {}, 404, "not registered"),
        ("/status-env", b"", {}, 422, "env_id is missing"),
        ("/status-env", b'{"env_id": 99}', {}, 404, "not registered"),
        ("/status-env?env_id=99", b"", {}, 404, "not registered"),
        ("/status-env?env_id=x", b"", {}, 422, "must be an integer"),
    ],
)
def test_bad_requests_get_a_4xx_with_a_reason_and_the_server_keeps_serving(
    client: TestClient, path: str, body: bytes, headers: dict[str, str], status: int, reason: str
) -> None:
    method = "GET" if path.startswith("/status-env") else "POST"
    reply = client.request(method, path, content=body, headers=headers)
    assert reply.status_code == status, reply.text
    detail = reply.json().get("detail") or reply.json().get("error")
    assert reason in detail
    assert client.get("/status").json() == {"current_step": 0, "queue_size": 0}
    assert client.post("/scored_data", json=group()).json() == {"status": "received"}


def test_a_readiness_probe_refused_is_not_logged_as_a_warning(client: TestClient, caplog: pytest.LogCaptureFixture) -> None:
    from hermes_rl_mcp.runs.probe import PROBE_HEADER

    caplog.set_level(logging.DEBUG, logger="hermes_rl_mcp.api")
    for path in ("/status-env?env_id=99", "/status-env?env_id=99&x=1"):  # the fast path, then the routed one
        assert client.get(path, headers={PROBE_HEADER: "1"}).status_code == 404
        assert client.get(path).status_code == 404
    levels = [record.levelname for record in caplog.records if "not registered" in record.getMessage()]
    assert levels == ["DEBUG", "WARNING", "DEBUG", "WARNING"]


def test_status_env_accepts_a_json_body_on_get_a_query_parameter_and_post(client: TestClient) -> None:
    client.post("/scored_data", json=group())
    by_body = client.request("GET", "/status-env", content=b'{"env_id": 0}').json()
    by_query = client.get("/status-env", params={"env_id": 0}).json()
    by_post = client.post("/status-env", json={"env_id": 0}).json()
    assert by_body == by_query == by_post
    assert by_body["self_queue_size"] == 1 and by_body["env_weight"] == 1.0
    assert client.get("/status-env?env_id=x").status_code == 422


def test_unknown_route_and_wrong_method_explain_themselves(client: TestClient) -> None:
    missing = client.get("/scored")
    assert missing.status_code == 404 and "/scored_data" in missing.json()["detail"]
    wrong = client.get("/scored_data")
    assert wrong.status_code == 405 and "POST" in wrong.json()["detail"]


def test_latest_example_is_the_last_queued_group(client: TestClient) -> None:
    assert client.get("/latest_example").json()["tokens"] == []
    sent = group()
    sent["tokens"] = [[9, 9, 9], [8, 8, 8]]
    client.post("/scored_data", json=sent)
    assert client.get("/latest_example").json()["tokens"] == [[9, 9, 9], [8, 8, 8]]


def test_layouts_and_unusual_fields_are_delivered_intact(client: TestClient) -> None:
    sent = group()
    sent["messages"] = [[{"role": "user", "content": "héllo \u2603"}], [{"role": "assistant", "content": "x"}]]
    sent["advantages"] = [[0.5, 1e-300, -0.0], [1, 2, 3]]
    sent["overrides"] = [{"temperature": 0.5}, {}]
    for text in (json.dumps(sent), json.dumps(sent, indent=2), json.dumps(sent, separators=(",", ":")),
                 json.dumps(sent, ensure_ascii=False)):
        assert client.post("/scored_data", content=text.encode()).json() == {"status": "received"}
    client.post("/register", json=dict(REGISTRATION, batch_size=8))
    delivered = client.get("/batch").json()["batch"]
    assert len(delivered) == 4
    for item in delivered:
        for name, value in sent.items():
            assert item[name] == value


# -- the fast lexical path agrees with plain JSON decoding ---------------------------------


def _reference(text: str, integers: bool) -> list[int] | None:
    try:
        value = json.loads(text)
    except ValueError:
        return None
    if type(value) is not list or any(type(row) is not list for row in value):
        return None
    allowed = (int,) if integers else (int, float)
    if any(type(x) not in allowed for row in value for x in row):
        return None
    return [len(row) for row in value]


def test_matrix_lexer_never_accepts_what_json_rejects() -> None:
    rng = random.Random(20261130)
    alphabet = list("0123456789-+.eE[], \n\t") + ["x", '"']
    numbers = ["0", "-0", "7", "-12", "305", "1.5", "-0.25", "1e5", "2E-07", "-3.0e+2", "0.000"]

    def valid() -> str:
        rows = [[rng.choice(numbers) for _ in range(rng.randrange(4))] for _ in range(rng.randrange(4))]
        comma = rng.choice([",", ", ", " , ", ",\n"])
        return "[" + comma.join("[" + comma.join(row) + "]" for row in rows) + "]"

    for _ in range(6000):
        text = valid()
        if rng.random() < 0.7:
            chars = list(text)
            for _ in range(rng.randrange(1, 3)):
                i = rng.randrange(len(chars) + 1)
                action = rng.randrange(3)
                if action == 0:
                    chars.insert(i, rng.choice(alphabet))
                elif chars:
                    j = min(i, len(chars) - 1)
                    if action == 1:
                        del chars[j]
                    else:
                        chars[j] = rng.choice(alphabet)
            text = "".join(chars)
        for integers, lexer in ((True, int_matrix_row_lengths), (False, number_matrix_row_lengths)):
            proven = lexer(text.encode())
            if proven is not None:
                assert proven == _reference(text, integers), text


def test_matrix_lexer_proves_the_layouts_clients_send() -> None:
    rows = [[0, 1, -100, 31999], [], [7]]
    floats = [[1.0, -0.6931471805599453, 2.5e-08], [-0.0]]
    for separators in ((", ", ": "), (",", ":")):
        assert int_matrix_row_lengths(json.dumps(rows, separators=separators).encode()) == [4, 0, 1]
        assert number_matrix_row_lengths(json.dumps(floats, separators=separators).encode()) == [3, 1]
    assert int_matrix_row_lengths(b"[]") == []
    # Exponents may start with 0 (Python writes 1e-05); numbers may not.
    assert number_matrix_row_lengths(b"[[1e-05, -0.5, 0e0], [-0]]") == [3, 1]
    assert number_matrix_row_lengths(b"[[1, -05]]") is None
    assert int_matrix_row_lengths(b"[[1.0]]") is None  # not proven: the decoder explains it


@pytest.mark.parametrize(
    "payload",
    [
        group(),
        {"tokens": [[1, 2]], "masks": [[1, 2]], "scores": [1]},
        {"tokens": [[1, 2]], "masks": [[1, 2]], "scores": [0.5], "messages": [[{"role": "user", "content": "a"}]]},
        {"tokens": [[1, 2]], "masks": [[1, 2]], "scores": ["0.5"]},
        {"tokens": [[1, 2.0]], "masks": [[1, 2]], "scores": [0.5]},
        {"tokens": [[1, 2]], "masks": [[1, 2]], "scores": [0.5], "advantages": [["x"]]},
        {"tokens": [[1, 2]], "masks": [[1, 2]], "scores": [0.5], "overrides": [3]},
        {"tokens": [[1, 2]], "masks": [[1, 2]], "scores": [0.5], "env_id": 1.5},
        {"tokens": [[1, 2]], "masks": [[1, 2]], "scores": [0.5], "group_overrides": []},
        {"tokens": [[1, 2]], "masks": [[1, 2]], "scores": [0.5], "distill_token_ids": [[[1.5]]]},
        {"tokens": "abc", "masks": [[1, 2]], "scores": [0.5]},
    ],
)
def test_group_check_agrees_with_the_reference_schema_on_types(payload: dict[str, Any]) -> None:
    try:
        ScoredData.model_validate(payload)
        schema_ok = True
    except ValidationError:
        schema_ok = False
    try:
        parse_scored_group(json.dumps(payload).encode())
        check_ok = True
    except WireError:
        check_ok = False
    assert check_ok == schema_ok
