"""Checks, without any network, that a tinker SDK has every call the tinker learner makes, with
the parameters it passes. Run with the interpreter of the SDK under test; prints the problems
as JSON (an empty list when all is well)."""

from __future__ import annotations

import dataclasses
import inspect
import json
import sys

import tinker
from tinker import types

# (object, attribute, parameters the learner passes by name)
CALLS = [
    (tinker, "ServiceClient", ["base_url", "api_key"]),
    (tinker.ServiceClient, "create_lora_training_client_async", ["base_model", "rank"]),
    (tinker.ServiceClient, "create_sampling_client", ["model_path"]),
    (tinker.TrainingClient, "forward_backward_async", ["data", "loss_fn"]),
    (tinker.TrainingClient, "optim_step_async", []),
    (tinker.TrainingClient, "save_weights_for_sampler", ["name"]),
    (tinker.TrainingClient, "save_weights_for_sampler_async", ["name"]),
    (tinker.TrainingClient, "save_state", ["name"]),
    (tinker.TrainingClient, "load_state_with_optimizer", ["path"]),
    (tinker.SamplingClient, "sample_async", ["prompt", "num_samples", "sampling_params"]),
    (types.ModelInput, "from_ints", []),
]
FIELDS = {
    "Datum": ["model_input", "loss_fn_inputs"],
    "AdamParams": ["learning_rate", "beta1", "beta2", "eps", "weight_decay", "grad_clip_norm"],
    "SamplingParams": ["max_tokens", "temperature", "top_p", "seed", "stop"],
}


def problems() -> list[str]:
    found = []
    for owner, name, parameters in CALLS:
        target = getattr(owner, name, None)
        if target is None:
            found.append(f"{getattr(owner, '__name__', owner)}.{name} is missing")
            continue
        if name.endswith("_async") and not inspect.iscoroutinefunction(inspect.unwrap(target)):
            found.append(f"{name} is not a coroutine function: the learner awaits it")
        accepted = inspect.signature(target.__init__ if inspect.isclass(target) else target).parameters
        takes_any = any(p.kind is inspect.Parameter.VAR_KEYWORD for p in accepted.values())
        for parameter in parameters:
            if parameter not in accepted and not takes_any:
                found.append(f"{name} takes no parameter {parameter!r}")
    for model, fields in FIELDS.items():
        cls = getattr(types, model)
        if hasattr(cls, "model_fields"):  # pydantic models, or dataclasses in newer SDKs
            declared = set(cls.model_fields)
        elif dataclasses.is_dataclass(cls):
            declared = {field.name for field in dataclasses.fields(cls)}
        else:
            declared = set(inspect.signature(cls).parameters)
        found += [f"types.{model} has no field {field!r}" for field in fields if field not in declared]
    data = types.Datum(
        model_input=types.ModelInput.from_ints([1, 2]),
        loss_fn_inputs={"target_tokens": [2, 3], "logprobs": [0.0, -1.0], "advantages": [0.0, 1.0]},
    )
    if data.model_input.length != 2:
        found.append("a Datum built from lists does not keep its tokens")
    return found


if __name__ == "__main__":
    json.dump({"version": tinker.__version__ if hasattr(tinker, "__version__") else None, "problems": problems()}, sys.stdout)
