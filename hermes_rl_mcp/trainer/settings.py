"""The local trainer's settings: the ``trainer.*`` fields of a run's config.

Kept free of NumPy and HTTP imports: the config layer reads these fields' schema on the
MCP server's hot path.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from hermes_rl_mcp.backend_names import LOCAL, TINKER


class TrainerConfig(BaseModel):
    model_config = ConfigDict(extra="forbid", validate_assignment=True)

    learning_rate: float = Field(3e-3, ge=1e-8, le=1, description="Adam step size.")
    batch_size: int = Field(64, gt=0, le=8192, description="Sequences per optimizer step.")
    temperature: float = Field(1.0, gt=0, le=5, description="Sampling temperature.")
    kl_coef: float = Field(0.0, ge=0, le=10, description="KL penalty weight (0: off).")
    entropy_coef: float = Field(0.0, ge=0, le=10, description="Weight of an entropy bonus.")
    # The bonus goes only to sequences that did not score above their group (learner.below_entropy_floor);
    # the description stays short: the whole config is sent to the agent's model.
    entropy_floor: float = Field(
        0.3, ge=0, le=5, description="Entropy (nats) below which a position gets a bonus (0: off)."
    )
    explore_prompt_words: float = Field(
        0.1, ge=0, le=1, description="Share of samples replaced by prompt words (0: off)."
    )
    explore_rewarded_answers: float = Field(
        0.05, ge=0, le=1, description="Share replaced by answers rewarded elsewhere (0: off)."
    )
    # The average's decay is lower over a run's first steps (learner.average_decay).
    average_decay: float = Field(
        0.8, ge=0, lt=1, description="Decay of the weight average used to evaluate (0: off)."
    )
    clip_epsilon: float = Field(0.2, gt=0, le=1, description="PPO clip range.")
    passes_per_batch: int = Field(3, ge=1, le=32, description="Optimizer steps per batch (PPO epochs).")
    max_grad_norm: float = Field(1.0, gt=0, le=1e6, description="Global gradient-norm clip.")
    checkpoint_interval: int = Field(50, gt=0, le=10_000_000, description="Steps between checkpoints.")
    seed: int = Field(0, ge=0, le=2**32 - 1, description="Seed of initialisation and sampling.")
    hidden_size: int = Field(64, ge=8, le=1024, description="Width of the policy model.")
    port: int = Field(0, ge=0, le=65535, description="Port of the policy server (0 picks a free one).")
    serve_after_final: float = Field(
        60.0,
        ge=0,
        le=3600,
        description="Seconds the policy serves after the run.",
    )


class TinkerTrainerConfig(BaseModel):
    """Settings of the trainer on the tinker backend: LoRA training of an LLM through the Tinker API.

    The engine's address and key are the operator's (TINKER_BASE_URL, TINKER_API_KEY), never
    fields here: the key goes wherever the address points.
    """

    model_config = ConfigDict(extra="forbid", validate_assignment=True)

    base_model: str = Field("Qwen/Qwen3-8B", min_length=1, max_length=500, description="Base model trained with LoRA (name or directory the engine serves).")
    lora_rank: int = Field(32, ge=1, le=512, description="LoRA rank.")
    learning_rate: float = Field(4e-5, ge=1e-10, le=1, description="Adam step size.")
    beta1: float = Field(0.9, ge=0, lt=1, description="Adam beta1.")
    beta2: float = Field(0.95, ge=0, lt=1, description="Adam beta2.")
    eps: float = Field(1e-8, gt=0, le=1, description="Adam epsilon.")
    weight_decay: float = Field(0.0, ge=0, le=1, description="Decoupled weight decay.")
    max_grad_norm: float = Field(0.0, ge=0, le=1e6, description="Gradient-norm clip; 0 disables it.")
    batch_size: int = Field(128, gt=0, le=65536, description="Sequences per optimizer step.")
    temperature: float = Field(1.0, gt=0, le=5, description="Default sampling temperature of the policy endpoint.")
    checkpoint_interval: int = Field(25, gt=0, le=10_000_000, description="Steps between saved training states.")
    request_timeout: float = Field(
        300.0, ge=1, le=3600, description="Seconds any one engine call may take before the run fails."
    )
    port: int = Field(0, ge=0, le=65535, description="Port of the policy endpoint (0 picks a free one).")
    serve_after_final: float = Field(
        60.0, ge=0, le=3600, description="Seconds the policy serves after the final checkpoint."
    )


class ResumePoint(BaseModel):
    """Where a resumed run starts (``run.resumed_from``): another run's checkpoint and its step."""

    model_config = ConfigDict(extra="forbid")

    run_id: str = Field(min_length=1, description="The run whose checkpoint this run starts from.")
    step: int = Field(ge=0, le=10_000_000, description="The step the checkpoint was saved at; this run counts on from it.")
    checkpoint: str = Field(min_length=1, description="Checkpoint file, or the engine's tinker:// state path.")


TRAINER_SETTINGS: dict[str, type[BaseModel]] = {LOCAL: TrainerConfig, TINKER: TinkerTrainerConfig}
