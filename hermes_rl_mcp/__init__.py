"""hermes-rl-mcp: an MCP server for reinforcement-learning training of LLMs."""

__version__ = "0.1.0"
