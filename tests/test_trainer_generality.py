"""The general trainer knows no task: no trainer module imports an environment or names a bundled one."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import hermes_rl_mcp.trainer.model
from hermes_rl_mcp.settings import BUNDLED_ENV_DIR

TRAINER_DIR = Path(hermes_rl_mcp.trainer.model.__file__).parent


def bundled_task_names() -> set[str]:
    """Each bundled environment's file name and its class's ``name`` attribute."""
    names: set[str] = set()
    for path in BUNDLED_ENV_DIR.glob("*.py"):
        names.add(path.stem)
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "name" for t in node.targets):
                if isinstance(node.value, ast.Constant) and isinstance(node.value.value, str):
                    names.add(node.value.value)
    return names


def imported_modules(tree: ast.AST) -> list[str]:
    found: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.extend(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            found.append("." * node.level + (node.module or ""))
        elif isinstance(node, ast.Call) and getattr(node.func, "attr", getattr(node.func, "id", "")) in ("import_module", "__import__"):
            found.extend(arg.value for arg in node.args if isinstance(arg, ast.Constant) and isinstance(arg.value, str))
    return found


def test_the_bundled_task_names_are_found() -> None:
    # the check below is only as good as this list
    assert {"reverse_text", "arithmetic", "navigation"} <= bundled_task_names()


def test_no_general_trainer_module_imports_an_environment_or_names_a_bundled_task() -> None:
    modules = sorted(TRAINER_DIR.glob("*.py"))
    assert len(modules) > 10
    names = bundled_task_names()
    word = re.compile(r"\b(" + "|".join(re.escape(n) for n in sorted(names)) + r")\b", re.IGNORECASE)
    offences: list[str] = []
    for path in modules:
        source = path.read_text(encoding="utf-8")
        for module in imported_modules(ast.parse(source)):
            if "environments" in module.split(".") or module.split(".")[-1] in names:
                offences.append(f"{path.name} imports {module}")
        for number, line in enumerate(source.splitlines(), 1):
            if match := word.search(line):
                offences.append(f"{path.name}:{number} names the bundled task {match.group(0)!r}: {line.strip()}")
    assert not offences, "general trainer code must know no task:\n" + "\n".join(offences)
