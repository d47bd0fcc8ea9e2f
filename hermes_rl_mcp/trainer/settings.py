"""The local trainer's settings: the ``trainer.*`` fields of a run's config.

Kept free of NumPy and HTTP imports: the config layer reads these fields' schema on the
MCP server's hot path.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field


class TrainerConfig(BaseModel):
    model_config = ConfigDict(extra="forbid", validate_assignment=True)

    learning_rate: float = Field(3e-3, gt=0, le=1, description="Adam step size.")
    batch_size: int = Field(64, gt=0, le=8192, description="Sequences per optimizer step.")
    temperature: float = Field(1.0, gt=0, le=5, description="Sampling temperature of the policy server.")
    kl_coef: float = Field(0.0, ge=0, le=10, description="Weight of the KL penalty to the initial policy (0 disables it).")
    entropy_coef: float = Field(0.0, ge=0, le=10, description="Weight of the entropy bonus on trained positions (keeps exploring).")
    clip_epsilon: float = Field(0.2, gt=0, le=1, description="PPO clip range of the importance ratio.")
    max_grad_norm: float = Field(1.0, gt=0, description="Global gradient-norm clip.")
    checkpoint_interval: int = Field(50, gt=0, description="Steps between periodic checkpoints.")
    seed: int = Field(0, ge=0, description="Seed of initialisation and sampling; the same seed gives the same run.")
    hidden_size: int = Field(64, ge=8, le=1024, description="Width of the policy model.")
    port: int = Field(0, ge=0, le=65535, description="Port of the policy server (0 picks a free one).")
    serve_after_final: float = Field(
        60.0,
        ge=0,
        le=3600,
        description="Seconds the policy keeps serving after the final checkpoint, for the final evaluation.",
    )
