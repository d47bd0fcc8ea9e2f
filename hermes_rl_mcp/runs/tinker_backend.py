"""The tinker backend: the trajectory API and the environment as on ``local``, and the trainer
with its Tinker learner (``trainer/tinker_learner.py``) against the operator's engine.

Before anything is spawned, ``check`` asks what would otherwise fail minutes into a run: the
key, the SDK and its version, an engine that answers, and a base model that engine serves.
Each failure is a refusal that says what to do.
"""

from __future__ import annotations

import importlib.metadata
import json
import urllib.request
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hermes_rl_mcp.backend_names import TINKER
from hermes_rl_mcp.runs.backends import ComponentSpec, LocalBackend, Ports
from hermes_rl_mcp.runs.errors import BackendUnavailable

if TYPE_CHECKING:  # the supervisor imports this module and pays for no model it does not use
    from hermes_rl_mcp.run_document import RunDocument

# The SDK's own default address when TINKER_BASE_URL is unset: the hosted Tinker service.
HOSTED_BASE_URL = "https://tinker.thinkingmachines.dev/services/tinker-prod"
SDK_RANGE = ((0, 16, 1), (0, 38, 0))  # the calls the learner makes work unchanged across it
ENGINE_ANSWER_SECONDS = 5.0
# What a trainer on this backend needs from the operator's environment, besides the basics.
COMPONENT_VARIABLES = ("TINKER_API_KEY", "TINKER_BASE_URL", "WANDB_API_KEY", "WANDB_BASE_URL", "HF_HOME", "HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE")


def _version(text: str) -> tuple[int, ...]:
    return tuple(int(part) for part in text.split("+")[0].split(".")[:3] if part.isdigit())


def sdk_problem() -> str | None:
    """Why the installed tinker SDK cannot serve, or None."""
    try:
        installed = importlib.metadata.version("tinker")
    except importlib.metadata.PackageNotFoundError:
        return "the tinker SDK is not installed: pip install 'hermes-rl-mcp[tinker]'"
    low, high = SDK_RANGE
    if not low <= _version(installed) <= high:
        return f"tinker SDK {installed} is outside the supported range {'.'.join(map(str, low))} to {'.'.join(map(str, high))}"
    return None


def _get_json(url: str, key: str) -> Any:
    request = urllib.request.Request(url, headers={"X-API-Key": key})
    with urllib.request.urlopen(request, timeout=ENGINE_ANSWER_SECONDS) as answer:  # noqa: S310 - the operator's engine
        return json.loads(answer.read().decode("utf-8"))


def engine_problem(base_url: str, key: str, base_model: str) -> str | None:
    """Why the engine at ``base_url`` cannot train ``base_model``, or None."""
    try:
        _get_json(f"{base_url}/api/v1/healthz", key)
    except (OSError, ValueError) as exc:
        return f"the Tinker engine at {base_url} did not answer within {ENGINE_ANSWER_SECONDS:g} s ({exc})"
    try:
        capabilities = _get_json(f"{base_url}/api/v1/get_server_capabilities", key)
    except (OSError, ValueError) as exc:
        return f"the Tinker engine at {base_url} did not list the models it serves ({exc})"
    served = [m.get("model_name") for m in capabilities.get("supported_models", []) if isinstance(m, dict)]
    if base_model not in served:
        return (
            f"the Tinker engine at {base_url} does not serve trainer.base_model {base_model!r}; it serves: "
            f"{', '.join(map(str, served)) or 'nothing'}"
        )
    return None


class TinkerBackend:
    name = TINKER
    # A stopped trainer saves its final state and releases its adapter on the engine.
    stop_grace = 30.0
    # A step samples whole groups from a real model and may take minutes on a small engine.
    stall_after = 900.0
    stall_fail = 3600.0

    def check(self, config: RunDocument, environ: Any) -> None:
        key = environ.get("TINKER_API_KEY", "")
        base_url = (environ.get("TINKER_BASE_URL") or "").strip().rstrip("/") or HOSTED_BASE_URL
        where = "the hosted Tinker service" if base_url == HOSTED_BASE_URL else f"the engine at {base_url}"
        if not key:
            raise BackendUnavailable(
                f"the tinker backend needs TINKER_API_KEY in the server's environment (the key for {where}; a "
                "self-hosted engine such as SkyRL tx accepts any key starting 'tml-'); set it in the client's "
                "env block for this server, or use backend 'local'"
            )
        if not key.startswith("tml-"):
            raise BackendUnavailable("TINKER_API_KEY must start with 'tml-' (the tinker SDK refuses other keys)")
        problem = sdk_problem()
        if problem:
            raise BackendUnavailable(f"{problem}; or use backend 'local'")
        LocalBackend().check(config, environ)  # the environment file runs on this machine on both backends
        env_file = Path(config.run.env_file or "")
        if "guided_choice" in env_file.read_text(encoding="utf-8", errors="replace"):
            raise BackendUnavailable(
                f"environment {config.run.environment!r} constrains answers with guided_choice, which "
                "Tinker's sampler cannot honour; train it on backend 'local', or change it to score free-form answers"
            )
        base_model = str(config.trainer_value("base_model", ""))
        problem = engine_problem(base_url, key, base_model)
        if problem:
            raise BackendUnavailable(
                f"{problem}. Start the engine (or check TINKER_BASE_URL), or point the tinker profile's "
                "trainer.base_model at a model it serves (HERMES_RL_PROFILE_TINKER)"
            )

    def components(self, config: RunDocument, config_path: Path, ports: Ports) -> list[ComponentSpec]:
        api, trainer, env = LocalBackend().components(config, config_path, ports)
        # Creating the LoRA client and the first sampler weights takes seconds to minutes.
        trainer = ComponentSpec(
            name=trainer.name, argv=trainer.argv, port_role=trainer.port_role, health_url=trainer.health_url,
            ready_timeout=600.0, extra_env_keys=COMPONENT_VARIABLES,
            stop_grace=self.stop_grace,
        )
        return [api, trainer, env]

    def secret_keys(self) -> tuple[str, ...]:
        return COMPONENT_VARIABLES
