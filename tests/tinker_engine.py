"""The self-hosted Tinker engine for tests: SkyRL tx on this machine's CPU with a tiny Qwen3.

``tests/engine/setup_engine.py`` installs the engine once into a cache outside the repository
and builds the model offline; ``tests/engine/launch.py`` starts it on 127.0.0.1 and stops it by
pid. A missing or broken engine fails the tests that need it.
"""

from __future__ import annotations

import json
import sys
import urllib.request
from pathlib import Path

ENGINE_DIR = Path(__file__).resolve().parent / "engine"
TEST_ENVS = Path(__file__).resolve().parent / "tinker_envs"
if str(ENGINE_DIR) not in sys.path:
    sys.path.insert(0, str(ENGINE_DIR))

import launch  # noqa: E402
import setup_engine  # noqa: E402

API_KEY = "tml-test-key"  # the engine takes any key; the SDK insists on the prefix


def engine_paths() -> dict:
    return setup_engine.ensure()


def start(paths: dict, **options) -> launch.Engine:
    return launch.start_engine(paths["engine_python"], paths["model_dir"], **options)


def write_profile(path: Path, model_dir: str, base_model: str | None = None) -> Path:
    """A tinker profile for a self-hosted engine: the tiny model in place of Hermes Agent's 8B one."""
    locked = {
        "env.rollout_server_url": "<assigned per run>",
        "trainer.port": "<assigned per run>",
        "openai.base_url": "<assigned per run>",
        "openai.api_key": "<assigned per run>",
        "env.tokenizer_name": model_dir,
        "env.max_token_length": 64,
        "trainer.base_model": base_model or model_dir,
        "trainer.lora_rank": 8,
        "openai.model_name": model_dir,
    }
    path.write_text(json.dumps({"backend": "tinker", "description": "test engine", "locked": locked}))
    return path


def server_environment(engine: launch.Engine, profile: Path, state: Path) -> dict[str, str]:
    return {
        "HERMES_RL_HOME": str(state),
        "HERMES_RL_ENV_DIRS": str(TEST_ENVS),
        "HERMES_RL_PROFILE_TINKER": str(profile),
        "TINKER_BASE_URL": engine.base_url,
        "TINKER_API_KEY": API_KEY,
        "HF_HUB_OFFLINE": "1",
    }


def adapter_status(engine: launch.Engine, model_id: str) -> str | None:
    request = urllib.request.Request(
        f"{engine.base_url}/api/v1/get_info", data=json.dumps({"model_id": model_id}).encode(),
        headers={"Content-Type": "application/json", "X-API-Key": API_KEY},
    )
    with urllib.request.urlopen(request, timeout=10) as answer:
        return json.loads(answer.read()).get("status")
