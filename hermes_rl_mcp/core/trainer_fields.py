"""The ``trainer.*`` fields of each backend."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from hermes_rl_mcp.trainer.settings import TrainerConfig


class TinkerTrainerConfig(BaseModel):
    """Settings of a trainer running on the Tinker service (LoRA fine-tuning of a hosted model)."""

    model_config = ConfigDict(extra="forbid")

    base_model: str = Field("Qwen/Qwen3-8B", description="Hosted base model trained with LoRA.")
    lora_rank: int = Field(32, gt=0, le=512, description="LoRA rank.")
    learning_rate: float = Field(4e-5, gt=0, le=1, description="Adam step size.")
    batch_size: int = Field(128, gt=0, le=65536, description="Sequences per optimizer step.")
    temperature: float = Field(1.0, gt=0, le=5, description="Sampling temperature.")
    kl_coef: float = Field(0.0, ge=0, le=10, description="Weight of the KL penalty to the base model.")
    checkpoint_interval: int = Field(25, gt=0, description="Steps between saved checkpoints.")
    seed: int = Field(0, ge=0, description="Seed of sampling.")
    port: int = Field(0, ge=0, le=65535, description="Port of the local inference proxy.")


TRAINER_SETTINGS: dict[str, type[BaseModel]] = {"local": TrainerConfig, "tinker": TinkerTrainerConfig}
