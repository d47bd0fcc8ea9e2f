"""Discovery reads files as syntax trees: what counts as an environment, and what is reported."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from hermes_rl_mcp.core import discovery
from hermes_rl_mcp.core.discovery import Discovery
from hermes_rl_mcp.settings import BUNDLED_ENV_DIR

SIMPLE = '''
from hermes_rl_mcp.sdk import BaseEnv, BaseEnvConfig

class {cls}(BaseEnv):
    """{doc}"""
    {name_line}
'''


def names(listing) -> set[str]:
    return {env.name for env in listing.environments}


def test_bundled_environments_are_found() -> None:
    listing = Discovery().scan([BUNDLED_ENV_DIR])
    assert {"reverse_text", "arithmetic", "navigation"} <= names(listing)
    assert listing.problems == []
    reverse = next(e for e in listing.environments if e.name == "reverse_text")
    assert reverse.sdk == "hermes" and reverse.config_class == "ReverseTextConfig"
    assert reverse.description and Path(reverse.file).is_file()


def test_syntax_error_is_a_problem_and_the_rest_still_lists(write_env) -> None:
    write_env("good.py", SIMPLE.format(cls="Good", doc="Fine.", name_line='name = "good"'))
    write_env("broken.py", "class Broken(BaseEnv):\n    def oops(:\n")
    listing = Discovery().scan([write_env.root])
    assert names(listing) == {"good"}
    [problem] = listing.problems
    assert problem.file.endswith("broken.py") and "syntax error at line 2" in problem.reason


def test_indirect_subclass_through_another_file_and_intermediate_base_not_listed(write_env) -> None:
    write_env("agents/base.py", '''
        from hermes_rl_mcp.sdk import BaseEnv
        class AgentBaseEnv(BaseEnv):
            """Shared agent plumbing; only exists to be subclassed."""
    ''')
    write_env("tasks/mine.py", '''
        from agents.base import AgentBaseEnv
        class Mine(AgentBaseEnv):
            """My task."""
    ''')
    listing = Discovery().scan([write_env.root])
    assert names(listing) == {"mine"}  # named after the file stem, AgentBaseEnv hidden
    assert listing.environments[0].class_name == "Mine"


def test_dotted_and_aliased_bases_count(write_env) -> None:
    write_env("dotted.py", '''
        import hermes_rl_mcp.sdk as envs
        class Dotted(envs.BaseEnv):
            """Dotted base."""
    ''')
    write_env("aliased.py", '''
        from hermes_rl_mcp.sdk import BaseEnv as Root
        class Aliased(Root):
            """Aliased base."""
    ''')
    assert names(Discovery().scan([write_env.root])) == {"dotted", "aliased"}


def test_atroposlib_environments_are_found_and_marked(write_env) -> None:
    write_env("gsm.py", '''
        from atroposlib.envs.base import BaseEnv, BaseEnvConfig
        class GSM8kEnv(BaseEnv):
            """Grade-school math."""
            name = "gsm8k"
    ''')
    [env] = Discovery().scan([write_env.root]).environments
    assert (env.name, env.sdk, env.description) == ("gsm8k", "atroposlib", "Grade-school math.")


def test_duplicate_names_are_reported_and_first_kept(write_env) -> None:
    write_env("a.py", SIMPLE.format(cls="First", doc="A.", name_line='name = "same"'))
    write_env("b.py", SIMPLE.format(cls="Second", doc="B.", name_line='name = "same"'))
    listing = Discovery().scan([write_env.root])
    [env] = listing.environments
    assert env.class_name == "First"
    [problem] = listing.problems
    assert "duplicate environment name 'same'" in problem.reason and problem.file.endswith("b.py")


def test_subclass_with_its_own_name_keeps_both_and_abstract_classes_hide(write_env) -> None:
    write_env("family.py", '''
        import abc
        from hermes_rl_mcp.sdk import BaseEnv
        class Easy(BaseEnv):
            """Easy."""
            name = "easy"
        class Hard(Easy):
            """Hard."""
            name = "hard"
        class Template(BaseEnv):
            """Not runnable."""
            @abc.abstractmethod
            def make(self): ...
        class Helper:
            """Not an environment at all."""
    ''')
    assert names(Discovery().scan([write_env.root])) == {"easy", "hard"}


def test_environment_code_is_never_run(write_env, tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    write_env("side_effect.py", f'''
        open({str(marker)!r}, "w").write("imported")
        from hermes_rl_mcp.sdk import BaseEnv
        class SideEffect(BaseEnv):
            """Writes a file when imported."""
    ''')
    assert names(Discovery().scan([write_env.root])) == {"side_effect"}
    assert not marker.exists()


def test_missing_directory_is_a_problem_not_a_failure(tmp_path: Path) -> None:
    listing = Discovery().scan([tmp_path / "nope"])
    assert listing.environments == [] and "does not exist" in listing.problems[0].reason


def test_thousand_files_scan_then_cache_reparses_only_changed_files(write_env, monkeypatch) -> None:
    for i in range(1000):
        write_env(f"pkg{i % 10}/env_{i}.py", SIMPLE.format(cls=f"Env{i}", doc=f"Env {i}.", name_line=f'name = "env_{i}"'))
    scanner = Discovery()
    first = scanner.scan([write_env.root])
    assert len(first.environments) == 1000 and first.problems == []

    parsed: list[Path] = []
    real_parse = discovery.parse_file
    monkeypatch.setattr(discovery, "parse_file", lambda p: parsed.append(p) or real_parse(p))
    assert len(scanner.scan([write_env.root]).environments) == 1000
    assert parsed == []  # warm: nothing re-read

    changed = write_env.root / "pkg7" / "env_7.py"
    changed.write_text(changed.read_text().replace('name = "env_7"', 'name = "renamed"'))
    os.utime(changed, ns=(changed.stat().st_atime_ns, changed.stat().st_mtime_ns + 10_000_000))
    third = scanner.scan([write_env.root])
    assert parsed == [changed]
    assert "renamed" in names(third) and "env_7" not in names(third)


@pytest.mark.parametrize("content", [b"\x00\x01 binary", b"\xff\xfe not utf-8 \x00"])
def test_unreadable_files_are_problems(write_env, content: bytes) -> None:
    (write_env.root / "weird.py").write_bytes(content)
    listing = Discovery().scan([write_env.root])
    assert listing.environments == [] and len(listing.problems) == 1
