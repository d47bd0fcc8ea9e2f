"""Run-control building blocks on their own: log tails, metric summaries, redaction, registry."""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
import time
from pathlib import Path

import pytest

from hermes_rl_mcp.runs.ids import RUN_ID_PATTERN, new_run_id, validate_run_id
from hermes_rl_mcp.runs.metrics import downsample, latest_metrics, summarize
from hermes_rl_mcp.runs.models import MetricPoint
from hermes_rl_mcp.runs.procs import is_same_process, start_time_of, terminate_trees
from hermes_rl_mcp.runs.redact import REDACTED, is_secret_name, redact_data, redact_text
from hermes_rl_mcp.runs.registry import Registry
from hermes_rl_mcp.runs.childenv import minimal_environment
from hermes_rl_mcp.runs.tail import tail_lines


@pytest.mark.parametrize("trailing_newline", [True, False])
def test_tail_lines_matches_reading_the_whole_file(tmp_path: Path, trailing_newline: bool) -> None:
    rng = random.Random(7)
    # Lines of very different lengths, so line ends fall on and around the 64 KiB block edges.
    lines = ["x" * rng.choice([0, 1, 50, 4000, 70_000]) + f" {i}" for i in range(300)]
    path = tmp_path / "log"
    path.write_text("\n".join(lines) + ("\n" if trailing_newline else ""))
    for wanted in (1, 2, 7, 150, 300, 1000):
        found, size, truncated = tail_lines(path, wanted)
        assert found == lines[-wanted:], wanted
        assert size == path.stat().st_size
        assert truncated == (wanted < len(lines))


def test_tail_lines_of_an_empty_file_and_one_huge_line_stays_bounded(tmp_path: Path) -> None:
    empty = tmp_path / "empty"
    empty.write_text("")
    assert tail_lines(empty, 5) == ([], 0, False)
    huge = tmp_path / "huge"
    huge.write_bytes(b"y" * (3 * 1024 * 1024) + b"\nlast\n")
    found, _, truncated = tail_lines(huge, 2, max_bytes=256 * 1024)
    assert found == ["last"] and truncated  # the 3 MiB line is not read whole


def test_latest_metrics_finds_rare_metrics_beyond_the_last_block(tmp_path: Path) -> None:
    path = tmp_path / "metrics.jsonl"
    with open(path, "w") as handle:
        handle.write(json.dumps({"step": 1, "time": 0, "eval/percent_correct": 0.25}) + "\n")
        for step in range(1, 3000):
            handle.write(json.dumps({"step": step, "time": 0, "train/loss": 1 / step, "pad": "z" * 40}) + "\n")
        handle.write('{"step": 3000, "train/lo')  # a line being written right now
    assert path.stat().st_size > 128 * 1024
    step, found = latest_metrics(path, ("train/loss", "eval/percent_correct", "reward/mean"))
    assert step == 2999
    assert found["train/loss"] == (pytest.approx(1 / 2999), 2999)
    assert found["eval/percent_correct"] == (0.25, 1)
    assert "reward/mean" not in found
    assert latest_metrics(tmp_path / "missing.jsonl", ("train/loss",)) == (0, {})

    with open(path, "a") as handle:  # the line being written is finished: the next read sees it
        handle.write('ss": 0.5, "reward/mean": 0.75}\n')
    step, found = latest_metrics(path, ("train/loss", "eval/percent_correct", "reward/mean"))
    assert step == 3000 and found["train/loss"] == (0.5, 3000) and found["reward/mean"] == (0.75, 3000)
    (tmp_path / "missing.jsonl").write_text(json.dumps({"step": 7, "train/loss": 0.1}) + "\n")
    assert latest_metrics(tmp_path / "missing.jsonl", ("train/loss",)) == (7, {"train/loss": (0.1, 7)})


def test_summaries_keep_first_and_last_points_and_rank_by_metric_kind() -> None:
    records = [{"step": s, "time": 0, "train/loss": 10 - s / 100, "eval/percent_correct": (s % 17) / 17} for s in range(1, 1001)]
    records.append({"step": 1001, "time": 0, "train/loss": None, "broken": "text"})
    final, best, history = summarize(records)
    assert final["train/loss"] == pytest.approx(10 - 1000 / 100)
    assert best["train/loss"].goal == "min" and best["train/loss"].step == 1000
    assert best["eval/percent_correct"].goal == "max" and best["eval/percent_correct"].value == pytest.approx(16 / 17)
    assert "broken" not in final
    points = history["train/loss"]
    assert len(points) == 40 and points[0].step == 1 and points[-1].step == 1000
    gaps = [b.step - a.step for a, b in zip(points, points[1:])]
    assert max(gaps) - min(gaps) <= 1  # evenly spread
    short = [MetricPoint(step=i, value=i) for i in range(5)]
    assert downsample(short, 40) == short


def test_secret_names_and_values_are_redacted_everywhere() -> None:
    for name in ("api_key", "WANDB_API_KEY", "TINKER_API_KEY", "HF_TOKEN", "access_token", "client_secret", "password", "apiKey"):
        assert is_secret_name(name), name
    for name in ("max_token_length", "tokenizer_name", "num_tokens", "group_size", "keyframe"):
        assert not is_secret_name(name), name
    secrets = ["abcdef123456"]
    document = {
        "openai": [{"api_key": "sk-1", "base_url": "http://127.0.0.1:1/v1"}],
        "env": {"max_token_length": 2048, "note": "uses abcdef123456 inside"},
        "trainer": {"password": None},
    }
    clean = redact_data(document, secrets)
    assert clean["openai"][0] == {"api_key": REDACTED, "base_url": "http://127.0.0.1:1/v1"}
    assert clean["env"] == {"max_token_length": 2048, "note": f"uses {REDACTED} inside"}
    assert clean["trainer"]["password"] is None
    assert document["openai"][0]["api_key"] == "sk-1"  # the input is not modified
    assert redact_text("key=abcdef123456;", secrets) == f"key={REDACTED};"


def test_a_secret_set_in_the_process_environment_is_redacted_from_the_next_call_on(monkeypatch: pytest.MonkeyPatch) -> None:
    """The process's secrets are found again whenever its environment changes, however it changes."""
    text = "first=first-secret-value second=second-secret-value"
    assert redact_text(text) == text
    monkeypatch.setenv("SERVICE_API_KEY", "first-secret-value")
    assert redact_text(text) == f"first={REDACTED} second=second-secret-value"
    monkeypatch.setenv("SERVICE_API_KEY", "second-secret-value")  # same names, another value
    assert redact_text(text) == f"first=first-secret-value second={REDACTED}"
    monkeypatch.delenv("SERVICE_API_KEY")
    monkeypatch.setenv("OTHER_TOKEN", "first-secret-value")  # one name gone, another come: same count
    assert redact_text(text) == f"first={REDACTED} second=second-secret-value"


def test_minimal_environment_passes_only_what_components_need() -> None:
    source = {
        "PATH": "/bin", "HOME": "/home/u", "LC_ALL": "C", "HERMES_RL_HOME": "/s", "OPENAI_API_KEY": "sk-x",
        "GITHUB_TOKEN": "ghp", "WANDB_API_KEY": "w", "TINKER_API_KEY": "t", "AWS_SECRET_ACCESS_KEY": "a",
    }
    env = minimal_environment(("WANDB_API_KEY",), source)
    assert set(env) == {"PATH", "HOME", "LC_ALL", "HERMES_RL_HOME", "WANDB_API_KEY", "PYTHONUNBUFFERED", "OPENBLAS_NUM_THREADS"}
    assert env["OPENBLAS_NUM_THREADS"] == "1"  # components share the cores; no BLAS thread pool each


def test_the_operators_blas_settings_reach_the_components() -> None:
    source = {"PATH": "/bin", "OPENBLAS_CORETYPE": "Haswell", "OPENBLAS_NUM_THREADS": "4", "OPENBLAS_TOKEN": "t0ken"}
    env = minimal_environment((), source)
    assert env["OPENBLAS_CORETYPE"] == "Haswell" and env["OPENBLAS_NUM_THREADS"] == "4"
    assert "OPENBLAS_TOKEN" not in env
    assert "OPENBLAS_NUM_THREADS" not in minimal_environment((), {"PATH": "/bin", "OMP_NUM_THREADS": "3"})


def test_run_ids_are_sortable_and_validated() -> None:
    early, late = new_run_id(1_800_000_000), new_run_id(1_800_000_060)
    assert RUN_ID_PATTERN.fullmatch(early) and early[:16] < late[:16]
    assert validate_run_id(early) == early
    for bad in (None, 42, "", "r-18000000-0000-zzzzzz", early + "\n", "../" + early):
        with pytest.raises(Exception, match="malformed run id"):
            validate_run_id(bad)


def test_registry_terminal_states_are_never_overwritten_and_every_change_is_logged(tmp_path: Path) -> None:
    run_id = new_run_id()
    with Registry(tmp_path) as registry:
        registry.insert_run(run_id=run_id, environment="demo", backend="local", run_dir=str(tmp_path), total_steps=5, reason="run created")
        assert registry.transition(run_id, "running", "all components ready", from_states=("starting",))
        assert registry.transition(run_id, "failed", "trainer exited with code -9", exit_code=-9)
        assert not registry.transition(run_id, "completed", "late")
        assert not registry.transition(run_id, "stopped", "late")
    # A second connection (another process, a restarted server) sees the same story.
    with Registry(tmp_path) as other:
        row = other.get_run(run_id)
        assert row is not None and row["status"] == "failed" and row["exit_code"] == -9
        assert [(e["status"], e["reason"]) for e in other.events(run_id)] == [
            ("starting", "run created"), ("running", "all components ready"), ("failed", "trainer exited with code -9"),
        ]
        assert other._db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


def test_a_reused_pid_is_not_mistaken_for_the_recorded_process() -> None:
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"], start_new_session=True)
    try:
        started = start_time_of(child.pid)
        assert started is not None and is_same_process(child.pid, started)
        assert not is_same_process(child.pid, started + 1)  # same pid, another start: someone else
        assert terminate_trees([(child.pid, started + 1)], grace=0.2) == []
        assert child.poll() is None  # an unverified process is left alone
        began = time.monotonic()
        assert terminate_trees([(child.pid, started)], grace=2.0, reap=lambda: child.poll()) == []
        assert time.monotonic() - began < 2.0 and child.poll() == -15
        assert not is_same_process(child.pid, started)
    finally:
        if child.poll() is None:
            os.kill(child.pid, 9)
            child.wait()


def test_every_address_in_a_run_document_points_at_the_runs_own_ports() -> None:
    from hermes_rl_mcp.run_document import from_data

    document = from_data({
        "run": {"environment": "reverse_text"},
        "env": {"group_size": 8, "rollout_server_url": "http://localhost:8000"},
        "openai": [{"model_name": "hermes-rl-local"}, {"model_name": "other", "base_url": "http://127.0.0.1:8001/v1", "api_key": "k"}],
        "trainer": {"learning_rate": 0.01, "port": 8001},
    })
    updated = document.with_ports(41001, 41002).to_data()
    assert updated["run"]["api_url"] == "http://127.0.0.1:41001"
    assert updated["run"]["policy_url"] == "http://127.0.0.1:41002/v1"
    assert updated["env"] == {"group_size": 8, "rollout_server_url": "http://127.0.0.1:41001"}
    assert [s["base_url"] for s in updated["openai"]] == ["http://127.0.0.1:41002/v1"] * 2
    assert updated["openai"][1]["api_key"] == "k" and updated["openai"][0]["api_key"]
    assert updated["trainer"]["learning_rate"] == 0.01 and updated["trainer"]["port"] == 41002
    assert document.trainer.port == 8001  # the input is left alone
    single = from_data({"run": {}, "openai": {"model_name": "m"}}).with_ports(1, 2).to_data()
    assert single["openai"] == [{"model_name": "m", "base_url": "http://127.0.0.1:2/v1", "api_key": "local"}]
    bare = from_data({"run": {}}).with_ports(1, 2).to_data()
    assert bare["openai"][0]["base_url"] == "http://127.0.0.1:2/v1" and bare["trainer"]["port"] == 2


def test_a_run_document_names_each_wrong_field() -> None:
    from hermes_rl_mcp.run_document import RunDocumentError, from_data

    with pytest.raises(RunDocumentError, match=r"env.total_steps: Input should be greater than 0"):
        from_data({"run": {"environment": "demo"}, "env": {"total_steps": -3}})
    with pytest.raises(RunDocumentError, match=r"trainer.learning_rate"):
        from_data({"run": {"backend": "local"}, "trainer": {"learning_rate": "fast"}})
    with pytest.raises(RunDocumentError, match=r"run.colour: Extra inputs are not permitted"):
        from_data({"run": {"colour": "blue"}})
    with pytest.raises(RunDocumentError, match="a mapping with sections"):
        from_data(["run"])
    # An operator's own backend keeps its trainer section as written.
    assert from_data({"run": {"backend": "cluster"}, "trainer": {"nodes": 4}}).trainer == {"nodes": 4}


def test_results_follow_every_change_to_the_runs_files(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Results read a run's files once per change: each append, replacement or new file shows."""
    from hermes_rl_mcp.run_document import from_data, write
    from hermes_rl_mcp.runs import get_results
    from hermes_rl_mcp.runs.layout import RunPaths

    state = tmp_path / "state"
    paths = RunPaths.of(state, new_run_id())
    for folder in (paths.logs, paths.checkpoints):
        folder.mkdir(parents=True)
    with Registry(state) as registry:
        registry.insert_run(run_id=paths.run_id, environment="demo", backend="local", run_dir=str(paths.root),
                            total_steps=10, reason="run created")
    write(paths.config, from_data({"run": {"environment": "demo"}, "trainer": {"learning_rate": 0.01}}))

    def append(path: Path, record: dict) -> None:
        with open(path, "a") as handle:
            handle.write(json.dumps(record) + "\n")

    append(paths.metrics, {"step": 1, "train/loss": 2.0})
    first = get_results(paths.run_id, state=state)
    assert first.final_metrics == {"train/loss": 2.0} and first.checkpoints == []
    assert get_results(paths.run_id, state=state).final_metrics == {"train/loss": 2.0}  # read again: the same

    append(paths.metrics, {"step": 2, "train/loss": 1.5})  # same second, a few bytes more
    assert get_results(paths.run_id, state=state).final_metrics == {"train/loss": 1.5}

    (paths.checkpoints / "step_2.npz").write_bytes(b"x")
    append(paths.checkpoints_index, {"step": 2, "path": "checkpoints/step_2.npz", "kind": "final"})
    results = get_results(paths.run_id, state=state)
    assert [c.exists for c in results.checkpoints] == [True] and results.final_checkpoint.endswith("step_2.npz")
    (paths.checkpoints / "step_2.npz").unlink()
    assert [c.exists for c in get_results(paths.run_id, state=state).checkpoints] == [False]

    write(paths.config, from_data({"run": {"environment": "demo"}, "trainer": {"learning_rate": 0.02}}))
    assert get_results(paths.run_id, state=state).config["trainer"]["learning_rate"] == 0.02

    (paths.wandb / "offline-run-1").mkdir(parents=True)
    assert get_results(paths.run_id, state=state).wandb.mode == "offline"

    append(paths.notes, {"component": "trainer", "note": "learning rate lowered"})
    assert get_results(paths.run_id, state=state).notes == ["trainer: learning rate lowered"]

    paths.lineage.write_text(json.dumps({"run_id": "r-20260101-0000-000000", "step": 4, "checkpoint": "c"}))
    assert get_results(paths.run_id, state=state).resumed_from.step == 4

    monkeypatch.setenv("DEMO_API_KEY", "learning rate lowered")  # a secret that happens to be in a note
    assert get_results(paths.run_id, state=state).notes == [f"trainer: {REDACTED}"]

    with Registry(state) as registry:
        registry.transition(paths.run_id, "failed", "trainer exited 1", from_states=("starting",), ended_at=time.time())
    ended = get_results(paths.run_id, state=state)
    assert ended.status == "failed" and [event.status for event in ended.events][-1] == "failed"
    assert get_results(paths.run_id, state=state) is ended  # nothing changed since: the same answer
