"""The environment SDK: what environment files import."""

from hermes_rl_mcp.sdk.base import APIServerConfig, BaseEnv, BaseEnvConfig, Item, ScoredDataGroup

__all__ = ["APIServerConfig", "BaseEnv", "BaseEnvConfig", "Item", "ScoredDataGroup"]
