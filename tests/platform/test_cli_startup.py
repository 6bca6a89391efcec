"""The commands that only talk to the API, and `trellis token`, import none of the server
stack.

Temporal's SDK, FastAPI, the worker's executors and the CEL parser take seconds of CPU to
import on a loaded machine; a `trellis runs list` needs none of them. The client commands
run in turn in one fresh interpreter against an API that is not there (its one-line error
is the answer each gives); after each, the test reads which modules are loaded.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.platform.conftest import REPO, trellis_env
from tests.support.server import free_port

# What only `trellis dev`, `api`, `worker` and `setup` (and `token`'s JWT library) need.
SERVER_STACK = (
    "temporalio",
    "fastapi",
    "uvicorn",
    "celpy",
    "mcp",
    "a2a",
    "opentelemetry.sdk",
    "activities.store",
    "temporal_workflows.interpreter",
    "jwt",
)

CLIENT_COMMANDS = [
    ["--help"],
    ["workflows", "list"],
    ["workflows", "show", "wf-1"],
    ["workflows", "enable", "wf-1"],
    ["runs", "start", "wf-1", "--input", "who=Ada"],
    ["runs", "list", "wf-1"],
    ["runs", "show", "run-1"],
    ["runs", "cancel", "run-1"],
    ["approvals"],
    ["approve", "run-1", "step-1", "--reject"],
]  # (`runs watch` waits for an API that is down; its module is loaded by `runs` already)

# Every command in one interpreter, in turn: what each left loaded, and its exit code.
PROBE = """
import json, sys
from app.cli.main import main
stack, commands = json.loads(sys.stdin.read())
for argv in commands:
    code = main(argv)
    loaded = [m for m in stack if m in sys.modules]
    print(json.dumps({"argv": argv, "code": code, "loaded": loaded}))
"""


def test_client_commands_load_none_of_the_server_stack(tmp_path: Path) -> None:
    # A closed port: each command fails fast, as it does when the API is down.
    url = f"http://127.0.0.1:{free_port()}"
    commands = [argv if argv == ["--help"] else [*argv, "--url", url] for argv in CLIENT_COMMANDS]
    result = subprocess.run(
        [sys.executable, "-c", PROBE],
        input=json.dumps([SERVER_STACK, commands]),
        env=trellis_env(tmp_path),
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert "Traceback" not in result.stderr, result.stderr
    answers = [json.loads(line) for line in result.stdout.splitlines() if line.startswith("{")]
    assert [a["argv"] for a in answers] == commands
    for answer in answers:
        assert answer["loaded"] == [], f"{answer['argv']} imported {answer['loaded']}"
        # --help answers 0; the others say in one line that the API is not there.
        assert answer["code"] == (0 if answer["argv"] == ["--help"] else 1), answer
    said = f"Error: cannot reach the Trellis API at {url}"
    assert result.stderr.count(said) == len(commands) - 1, result.stderr


def test_token_loads_only_the_jwt_library(tmp_path: Path) -> None:
    env = trellis_env(tmp_path, TRELLIS_JWT_SECRET="s" * 32)
    result = subprocess.run(
        [sys.executable, "-c", PROBE],
        input=json.dumps([SERVER_STACK, [["token", "--sub", "ada", "--scopes", "workflows-read"]]]),
        env=env,
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
    )
    token, answer = result.stdout.splitlines()
    assert token.count(".") == 2, result.stdout  # header.claims.signature
    assert json.loads(answer)["code"] == 0
    assert json.loads(answer)["loaded"] == ["jwt"], result.stdout
