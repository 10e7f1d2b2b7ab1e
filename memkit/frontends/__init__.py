"""The front ends over memkit.Vault: the command line (cli/), the HTTP API (http/), the MCP server (mcp/) and the watcher."""
