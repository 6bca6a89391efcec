"""The benchmark's A2A echo agent (`tests.peers.a2a_agents`), served in its own process.

`python -m bench.a2a_peer --port P` serves it at `http://127.0.0.1:P/agents/bench-agent/`.
"""

from __future__ import annotations

import argparse

import uvicorn

from tests.peers.a2a_agents import AgentSpec, AgentStats, agents_app

AGENT = "bench-agent"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, required=True)
    port = parser.parse_args().port
    app = agents_app([AgentSpec(AGENT)], f"http://127.0.0.1:{port}", AgentStats())
    uvicorn.run(app, host="127.0.0.1", port=port, log_level="warning")


if __name__ == "__main__":
    main()
