"""Loose validation: paths stay inside the run, names are printable, numbers are what a person means,
and every numeric field is bounded at both ends. Driven through a real MCP client in both eras."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from hermes_rl_mcp.sdk.runtime import inside_run_dir
from mcp_helpers import ERAS, in_memory, refusal_text, structured

REFUSED_EDITS = [
    ("env.data_path_to_save_groups", "/etc/passwd", "not a path inside the run's directory"),
    ("env.data_path_to_save_groups", "../../x.jsonl", "not a path inside the run's directory"),
    ("env.data_path_to_save_groups", "data/../../x.jsonl", "not a path inside the run's directory"),
    ("env.data_path_to_save_groups", "~/x.jsonl", "not a path inside the run's directory"),
    ("env.data_path_to_save_groups", "groups\x00.jsonl", "unprintable character U+0000"),
    ("env.wandb_name", "run\x00name", "unprintable character U+0000"),
    ("env.wandb_name", "\x1b[31mred\x1b[0m", "unprintable character U+001B"),
    ("env.wandb_name", "two\nlines", "unprintable character U+000A"),
    ("env.wandb_name", "carriage\rreturn", "unprintable character U+000D"),
    ("env.wandb_name", "right\u202eto-left", "unprintable character U+202E"),
    ("env.group_size", " 5 ", "not a number as written"),
    ("env.group_size", "1_000", "not a number as written"),
    ("env.group_size", "\uff15", "not a number as written"),  # a full-width 5
    ("env.group_size", "\u0665", "not a number as written"),  # an Arabic-Indic 5
    ("trainer.learning_rate", "1e-400", "would become 0.0"),
    ("trainer.learning_rate", 5e-324, "smallest normal float"),
    ("trainer.learning_rate", "5e-324", "smallest normal float"),
    ("trainer.learning_rate", 1e-12, ">= 1e-08"),
    ("openai.timeout", 0, "is not > 0"),
    ("openai.timeout", -5, "is not > 0"),
    ("openai.timeout", "-0.5", "is not > 0"),
    ("openai.timeout", 10**6, "<= 3600"),
    ("env.seed", -1, ">= 0"),
    ("openai.num_max_requests_at_once", 0, ">= 1"),
]

ACCEPTED_EDITS = [
    ("env.data_path_to_save_groups", "data/groups.jsonl", "data/groups.jsonl"),
    ("env.wandb_name", "run 7 · arithmetic ✓", "run 7 · arithmetic ✓"),
    ("env.group_size", "8", 8),
    ("trainer.learning_rate", "3e-4", 0.0003),
    ("openai.timeout", "30.5", 30.5),
]


@pytest.mark.parametrize("era", ERAS)
def test_loose_values_are_refused_and_change_nothing(era: str) -> None:
    async def scenario() -> None:
        async with in_memory(era) as client:
            structured(await client.call_tool("rl_select_environment", {"name": "reverse_text"}))
            before = structured(await client.call_tool("rl_get_current_config", {}))["editable"]
            for field, value, why in REFUSED_EDITS:
                text = refusal_text(await client.call_tool("rl_edit_config", {"field": field, "value": value}))
                assert why in text and "nothing was changed" in text, (field, value, text)
            unknown = await client.call_tool("rl_edit_config", {"field": "env.group_size", "value": 4, "force": True})
            text = refusal_text(unknown)
            assert 'takes no argument "force"' in text and "Valid arguments: field" in text, text
            after = structured(await client.call_tool("rl_get_current_config", {}))["editable"]
            assert after == before, "refused edits changed the config"
            for field, value, expected in ACCEPTED_EDITS:
                edited = structured(await client.call_tool("rl_edit_config", {"field": field, "value": value}))
                assert edited["new_value"] == expected

    anyio.run(scenario)


@pytest.mark.parametrize("backend", ["local", "tinker"])
def test_every_numeric_field_is_bounded_at_both_ends(backend: str) -> None:
    async def scenario() -> None:
        async with in_memory("auto") as client:
            for environment in ("reverse_text", "arithmetic", "navigation"):
                structured(await client.call_tool("rl_select_environment", {"name": environment}))
                structured(await client.call_tool("rl_edit_config", {"field": "run.backend", "value": backend}))
                editable = structured(await client.call_tool("rl_get_current_config", {}))["editable"]
                unbounded = []
                for name, field in editable.items():
                    kinds = field.get("type")
                    kinds = kinds if isinstance(kinds, list) else [kinds]
                    if {"integer", "number"} & set(kinds):
                        low = {"minimum", "exclusiveMinimum"} & set(field)
                        high = {"maximum", "exclusiveMaximum"} & set(field)
                        if not (low and high):
                            unbounded.append(name)
                assert not unbounded, f"{environment} on {backend}: numeric fields without both bounds: {unbounded}"

    anyio.run(scenario)


def test_the_environment_runtime_keeps_the_groups_file_inside_the_run(tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    (run_dir / "out").symlink_to(tmp_path)  # a link that leads out of the run
    assert inside_run_dir(run_dir, "data/groups.jsonl") == (run_dir / "data" / "groups.jsonl").resolve()
    for escape in ("/etc/passwd", "../x.jsonl", "out/x.jsonl"):
        with pytest.raises(ValueError, match="outside the run's directory"):
            inside_run_dir(run_dir, escape)
