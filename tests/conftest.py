"""Shared fixtures: every test gets its own state directory and no operator overrides."""

from __future__ import annotations

import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest


@pytest.fixture(autouse=True)
def isolated_state(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "state"
    monkeypatch.setenv("HERMES_RL_HOME", str(home))
    monkeypatch.delenv("HERMES_RL_ENV_DIRS", raising=False)
    monkeypatch.delenv("HERMES_RL_WRITABLE_ENV_DIR", raising=False)
    monkeypatch.delenv("HERMES_RL_CHECK_TIMEOUT", raising=False)
    for backend in ("LOCAL", "TINKER"):
        monkeypatch.delenv(f"HERMES_RL_PROFILE_{backend}", raising=False)
    return home


@pytest.fixture
def write_env(tmp_path: Path):
    """Write a Python file (dedented) under a fresh environment directory; returns its path."""
    root = tmp_path / "envs"
    root.mkdir(exist_ok=True)

    def write(relative: str, source: str) -> Path:
        path = root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(source))
        return path

    write.root = root  # type: ignore[attr-defined]
    return write


@pytest.fixture(scope="session")
def installed_wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The bin/ directory of a fresh virtual environment, outside the checkout, holding the built wheel."""
    from installs import build_wheel, install_wheel

    root = tmp_path_factory.mktemp("wheel")
    return install_wheel(build_wheel(root / "dist"), root / "venv")


@pytest.fixture(scope="module")
def engine_paths() -> dict:
    """The self-hosted Tinker engine, set up (once per machine, cached) for the module's tests."""
    import tinker_engine

    return tinker_engine.engine_paths()


@pytest.fixture(scope="module")
def engine(engine_paths: dict) -> Iterator:
    """SkyRL tx running on loopback for one test module; ended after it."""
    import tinker_engine

    with tinker_engine.start(engine_paths) as running:
        yield running
