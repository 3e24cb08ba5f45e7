"""The outside world: chat platforms, the LLM client, the terminal, the command line."""
