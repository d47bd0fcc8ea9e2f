"""The shipped environments: task formats, held-out splits and scoring rules."""

from __future__ import annotations

import ast
import importlib.util
import json
import subprocess
import sys
import zlib
from pathlib import Path
from types import ModuleType

import pytest

ENV_DIR = Path(__file__).resolve().parent.parent / "environments"


def load(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(f"shipped_env_{name}", ENV_DIR / f"{name}.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


reverse_text = load("reverse_text")
arithmetic = load("arithmetic")
navigation = load("navigation")


# -- reverse_text ---------------------------------------------------------------------------------


def test_reverse_right_answer_scores_one() -> None:
    assert reverse_text.score_reversal("enalp", "enalp") == 1.0
    assert reverse_text.score_reversal("  enalp\n", "enalp") == 1.0


def test_reverse_partial_answers_get_positional_credit_below_one() -> None:
    # 3 of 5 positions right
    assert reverse_text.score_reversal("enaxx", "enalp") == pytest.approx(0.5 * 3 / 5)
    # a longer answer is normalised by its own length: 5 right out of 7
    assert reverse_text.score_reversal("enalpzz", "enalp") == pytest.approx(0.5 * 5 / 7)
    # the unreversed input matches only the palindromic middle position
    assert reverse_text.score_reversal("plane", "enalp") == pytest.approx(0.5 * 1 / 5)
    assert reverse_text.score_reversal("enal", "enalp") < reverse_text.score_reversal("enalp", "enalp")


def test_reverse_wrong_and_garbage_score_zero() -> None:
    assert reverse_text.score_reversal("", "enalp") == 0.0
    assert reverse_text.score_reversal("   ", "enalp") == 0.0
    assert reverse_text.score_reversal("#%!?@", "enalp") == 0.0
    assert reverse_text.score_reversal("zzzzz", "enalp") == 0.0


def test_reverse_items_are_lowercase_3_to_6_and_split_is_disjoint() -> None:
    train = reverse_text.make_strings(500, seed=0, held_out=False)
    held = reverse_text.make_strings(100, seed=0, held_out=True)
    for text in train + held:
        assert 3 <= len(text) <= 6 and text.isalpha() and text.islower()
    assert not set(train) & set(held)
    assert all(zlib.crc32(t.encode()) % 10 == 0 for t in held)
    assert not any(zlib.crc32(t.encode()) % 10 == 0 for t in train)
    # deterministic in the seed, different across seeds
    assert train == reverse_text.make_strings(500, seed=0, held_out=False)
    assert train != reverse_text.make_strings(500, seed=1, held_out=False)


def test_reverse_eval_split_is_independent_of_seed() -> None:
    # a held-out string is never trained on, whatever seed a run uses
    held = set(reverse_text.make_strings(200, seed=3, held_out=True))
    for seed in range(3):
        assert not held & set(reverse_text.make_strings(2000, seed=seed, held_out=False))


# -- arithmetic -----------------------------------------------------------------------------------


def test_arithmetic_scores_right_other_integer_and_garbage() -> None:
    expected = arithmetic.solve((7, "-", 9))
    assert expected == -2
    assert arithmetic.score_answer("-2", expected) == 1.0
    assert arithmetic.score_answer(" -2\n", expected) == 1.0
    # a wrong integer: 0.1, +0.2 for the right length, +0.3 per share of characters in place
    assert arithmetic.score_answer("-1", expected) == pytest.approx(0.45)
    assert arithmetic.score_answer("-9", expected) == pytest.approx(0.45)  # closeness in value earns nothing
    assert arithmetic.score_answer("12", expected) == pytest.approx(0.45)
    assert arithmetic.score_answer("17", expected) == pytest.approx(0.3)
    assert arithmetic.score_answer("2", expected) == pytest.approx(0.1)
    assert arithmetic.score_answer("-12", expected) == pytest.approx(0.25)
    assert arithmetic.solve((9, "+", 4)) == 13 and arithmetic.score_answer("3", 13) == pytest.approx(0.1)
    # every possible answer is one of the strings decoding is constrained to
    assert {str(arithmetic.solve(p)) for p in arithmetic.all_problems()} <= set(arithmetic.ANSWER_CHOICES)
    for garbage in ["", "  ", "-", "two", "-2a", "2.0", "--2", "1 2"]:
        assert arithmetic.score_answer(garbage, expected) == 0.0, garbage


def test_arithmetic_split_is_fixed_20_percent_of_200() -> None:
    train, held = arithmetic.split_problems()
    assert len(train) + len(held) == 200
    assert len(held) == 40
    assert not set(train) & set(held)
    assert arithmetic.split_problems() == (train, held)
    assert {op for _, op, _ in held} == {"+", "-"}
    assert arithmetic.problem_text((7, "-", 9)) == "7-9"


# -- navigation -----------------------------------------------------------------------------------


def play(start: int, goal: int, replies: list[str], gamma: float = 0.9, max_turns: int = 8) -> tuple[bool, float]:
    return navigation.play_script(start, goal, replies, length=6, max_turns=max_turns, discount_factor=gamma)


def test_navigation_shortest_walk_gets_full_discounted_return() -> None:
    assert play(2, 5, ["R", "R", "R"]) == (True, pytest.approx(0.9**2))
    assert play(1, 0, [" L\n"]) == (True, pytest.approx(1.0))


def test_navigation_detour_succeeds_with_a_smaller_return() -> None:
    success, ret = play(2, 5, ["R", "L", "R", "R", "R"])
    assert success and ret == pytest.approx(0.9**4)
    assert ret < play(2, 5, ["R", "R", "R"])[1]
    # the discount factor is the config's
    assert play(2, 5, ["R", "L", "R", "R", "R"], gamma=0.5)[1] == pytest.approx(0.5**4)


def test_navigation_wrong_direction_and_running_out_of_turns_return_zero() -> None:
    assert play(2, 5, ["L"] * 8) == (False, 0.0)
    # the goal reached only on turn 9, past max_turns
    assert play(0, 5, ["L"] * 4 + ["R"] * 5, max_turns=8) == (False, 0.0)


def test_navigation_garbage_replies_waste_turns() -> None:
    assert play(2, 5, ["go right", "", "r", "RR"] * 2) == (False, 0.0)
    success, ret = play(2, 5, ["?", "R", "R", "R"])
    assert success and ret == pytest.approx(0.9**3)


def test_navigation_observation_format_and_walls() -> None:
    corridor = navigation.Corridor(0, 3, 6)
    outcome = corridor.act("L")  # into the wall: stays put
    assert outcome.next_message == "You are at 0, the goal is at 3. Move L or R." and outcome.reward == 0.0
    assert corridor.act("R").next_message == "You are at 1, the goal is at 3. Move L or R."
    with pytest.raises(ValueError):
        navigation.Corridor(2, 2, 6)


def test_navigation_split_holds_out_a_fifth_of_pairs() -> None:
    train, held = navigation.split_pairs(6)
    assert len(train) + len(held) == 30 and len(held) == 6
    assert not set(train) & set(held)
    assert all(s != g for s, g in train + held)


# -- what other components rely on ----------------------------------------------------------------


@pytest.mark.parametrize("module", [reverse_text, arithmetic, navigation])
def test_config_init_has_exploration_rate_and_valid_defaults(module: ModuleType) -> None:
    env_cls = next(
        v for v in vars(module).values() if isinstance(v, type) and getattr(v, "name", None) and v.__module__ == module.__name__
    )
    config, servers = env_cls.config_init()
    assert isinstance(config, env_cls.env_config_cls)
    assert config.exploration_rate == 0.1
    assert servers and servers[0].base_url
    with pytest.raises(ValueError):
        env_cls.env_config_cls(exploration_rate=1.5)


def test_navigation_config_fields() -> None:
    config, _ = navigation.NavigationEnv.config_init()
    assert (config.corridor_length, config.max_turns, config.discount_factor) == (6, 8, 0.9)


@pytest.mark.parametrize("name", ["reverse_text", "arithmetic", "navigation"])
def test_file_is_discoverable_and_imports_cheaply(name: str) -> None:
    path = ENV_DIR / f"{name}.py"
    tree = ast.parse(path.read_text())
    classes = [n for n in tree.body if isinstance(n, ast.ClassDef) and any(getattr(b, "id", "") == "BaseEnv" for b in n.bases)]
    assert len(classes) == 1
    body = classes[0].body
    assert ast.get_docstring(classes[0])
    assigned = {t.id: s.value for s in body if isinstance(s, ast.Assign) for t in s.targets if isinstance(t, ast.Name)}
    assert isinstance(assigned["name"], ast.Constant) and assigned["name"].value == name
    assert "env_config_cls" in assigned
    last = tree.body[-1]
    assert isinstance(last, ast.If) and "__main__" in ast.unparse(last.test) and ".cli()" in ast.unparse(last.body[0])
    # importing the file pulls in neither HTTP clients, NumPy nor W&B
    probe = (
        "import importlib.util, json, sys\n"
        f"spec = importlib.util.spec_from_file_location('probe', {str(path)!r})\n"
        "m = importlib.util.module_from_spec(spec); spec.loader.exec_module(m)\n"
        "print(json.dumps(sorted(k for k in ('httpx', 'numpy', 'wandb', 'aiohttp') if k in sys.modules)))\n"
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60, check=True)
    assert json.loads(out.stdout) == []
