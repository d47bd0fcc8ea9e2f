"""The package's structure as users of it meet it: what an environment file pulls in when it
imports the SDK, the SDK's one import direction, and one exception root to catch."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

import hermes_rl_mcp
from hermes_rl_mcp.api.models import WireError
from hermes_rl_mcp.core.errors import ControlError
from hermes_rl_mcp.errors import HermesRLError
from hermes_rl_mcp.runs.errors import RunError
from hermes_rl_mcp.sdk.api_client import TrajectoryAPIError
from hermes_rl_mcp.sdk.policy_client import PolicyError
from hermes_rl_mcp.sdk.run_config import ConfigError
from hermes_rl_mcp.trainer.seam import TrainerError

SDK = Path(hermes_rl_mcp.__file__).parent / "sdk"


def _sdk_imports(path: Path) -> set[str]:
    """SDK modules ``path`` imports, at import time or inside a function (a deferred import
    still runs); imports for type annotations alone (``if TYPE_CHECKING:``) do not count."""
    found: set[str] = set()

    def visit(node: ast.AST) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and "TYPE_CHECKING" in ast.unparse(child.test):
                continue
            if isinstance(child, ast.ImportFrom) and child.module and child.module.startswith("hermes_rl_mcp.sdk."):
                found.add(child.module.rsplit(".", 1)[1])
            if isinstance(child, ast.Import):
                found.update(a.name.rsplit(".", 1)[1] for a in child.names if a.name.startswith("hermes_rl_mcp.sdk."))
            visit(child)

    visit(ast.parse(path.read_text(encoding="utf-8")))
    return found


def test_sdk_imports_go_one_way() -> None:
    graph = {path.stem: _sdk_imports(path) for path in SDK.glob("*.py")}

    def reaches(start: str, goal: str, seen: frozenset[str] = frozenset()) -> bool:
        return any(n == goal or (n not in seen and reaches(n, goal, seen | {n})) for n in graph.get(start, ()))

    cycles = sorted(module for module in graph if reaches(module, module))
    assert cycles == [], f"SDK modules in an import cycle: {cycles}"
    assert graph["env_types"] == set(), "the shared types import nothing of the SDK"
    for user in ("api_client", "policy_client", "run_config", "multiturn", "runtime", "base"):
        assert "env_types" in graph[user], user


def test_importing_the_sdk_loads_no_http_client_or_runtime() -> None:
    # Environment files and the config introspection child import the SDK; it must stay light.
    probe = (
        "import json, sys; import hermes_rl_mcp.sdk as sdk;"
        "print(json.dumps({'names': sorted(sdk.__all__), 'loaded': sorted(m for m, module in sys.modules.items()"
        " if module is not None and m.startswith(('httpx', 'hermes_rl_mcp.sdk.runtime', 'hermes_rl_mcp.sdk.policy_client', 'mcp')))}))"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    answer = json.loads(done.stdout)
    assert answer["names"] == ["APIServerConfig", "BaseEnv", "BaseEnvConfig", "Item", "ScoredDataGroup"]
    assert answer["loaded"] == []


def test_every_error_category_is_a_hermes_rl_error_and_keeps_its_stdlib_base() -> None:
    for category in (ControlError, RunError, TrainerError, WireError, TrajectoryAPIError):
        assert issubclass(category, HermesRLError), category
    assert issubclass(ConfigError, HermesRLError) and issubclass(ConfigError, ValueError)
    assert issubclass(PolicyError, HermesRLError) and issubclass(PolicyError, RuntimeError)
    try:
        raise WireError(404, "unknown env_id 7")
    except HermesRLError as caught:
        assert str(caught) == "unknown env_id 7"
