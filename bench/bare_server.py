"""Baseline for the start-up and latency benchmarks: a bare MCPServer with one echo tool."""

from mcp.server.mcpserver import MCPServer

server = MCPServer(name="bare", log_level="WARNING")


@server.tool()
def echo(text: str) -> str:
    return text


if __name__ == "__main__":
    server.run("stdio")
