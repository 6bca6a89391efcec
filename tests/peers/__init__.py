"""Real MCP servers and A2A agents for tests, served on 127.0.0.1 (see `tests.peers.catalog`)."""
