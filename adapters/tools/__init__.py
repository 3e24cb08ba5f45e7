"""The tools outside the core: MCP servers and web search, as one toolbox."""
