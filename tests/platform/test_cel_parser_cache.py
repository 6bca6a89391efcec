"""CEL's parser is built once per user and loaded back by every later start (app/cel_parser.py).

Each case is a fresh interpreter: the parser is a per-process singleton.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path

import httpx
import pytest
from temporalio.testing import WorkflowEnvironment

from app.cel_parser import cache_dir
from tests.builders import condition, echo
from tests.support.api_runs import create_and_trigger, wait_for
from tests.support.platform import TERMINAL
from tests.support.processes import Processes, process_env

# Start as `trellis api` and `trellis worker` do, then evaluate through the interpreter's
# own expression code; print what the start did and what the expressions gave.
_START = """
import json
from app.cel_parser import use_saved_cel_parser
outcome = use_saved_cel_parser()
from temporal_workflows.expressions import evaluate, render
print(json.dumps({
    "outcome": outcome,
    "sum": evaluate("input.a + size(input.b) * 2", {"input": {"a": 1, "b": [1, 2]}}),
    "text": render("{{ true && !false }}-{{ 'x' in input }}", {"input": {"x": 1}}),
}))
"""


# Expressions that fail each way cel-python words a failure (an operator's mismatch, a
# function's, a missing key, a syntax error): what a start prints of each.
_FAILING = [
    "input.amount == 2",
    "input.amount != 2",
    "input.amount < 'a'",
    "input.amount <= 'a'",
    "input.amount > 'a'",
    "input.amount >= 'a'",
    "input.amount in 2",
    "input.amount + 'a'",
    "input.amount - 'a'",
    "input.amount * 'a'",
    "input.amount / 2",
    "input.amount % 2",
    "-input.s",
    "!input.amount",
    "input.amount[0]",
    "size(input.amount)",
    "input.missing",
    "input.amount.x",
    "input.l.all(x, x == 1)",
    "input.amount == 2 || false",
    "1 +",
]
_MESSAGES = """
import json, sys
from app.cel_parser import use_saved_cel_parser
outcome = use_saved_cel_parser()
from temporal_workflows.expressions import ExpressionError, evaluate
messages = []
for source in json.loads(sys.argv[1]):
    try:
        evaluate(source, {"input": {"amount": 2.0, "s": "x", "l": [1.5]}})
    except ExpressionError as error:
        messages.append(str(error))
print(json.dumps({"outcome": outcome, "messages": messages}))
"""


def _messages(cache_home: Path) -> tuple[object, list[str]]:
    """What a start did, and its messages of the _FAILING expressions."""
    env = {**os.environ, "XDG_CACHE_HOME": str(cache_home)}
    done = subprocess.run(
        [sys.executable, "-c", _MESSAGES, json.dumps(_FAILING)], env=env, capture_output=True,
        text=True, check=True, cwd=cache_home.parent,
    )  # fmt: skip
    answer = json.loads(done.stdout)
    return answer["outcome"], answer["messages"]


def _start(cache_home: Path, **env_vars: str) -> dict[str, object]:
    env = {**os.environ, "XDG_CACHE_HOME": str(cache_home), **env_vars}
    done = subprocess.run(
        [sys.executable, "-c", _START], env=env, capture_output=True, text=True, check=True,
        cwd=cache_home.parent,
    )  # fmt: skip
    assert done.stderr == ""  # nothing logged, even when the cache is of no use
    answer: dict[str, object] = json.loads(done.stdout)
    assert (answer["sum"], answer["text"]) == (5, "true-true")
    return answer


def _saved(cache_home: Path) -> list[Path]:
    return sorted((cache_home / "trellis").glob("cel-parser-*.pickle"))


def test_the_first_start_saves_the_parser_and_the_next_loads_it(tmp_path: Path) -> None:
    assert _start(tmp_path)["outcome"] == "built and saved"
    [saved] = _saved(tmp_path)
    written = saved.stat().st_mtime_ns
    assert _start(tmp_path)["outcome"] == "loaded"
    assert saved.stat().st_mtime_ns == written
    assert [p.name for p in (tmp_path / "trellis").iterdir()] == [saved.name]  # no leftovers


def test_a_loaded_parser_words_every_failure_as_a_built_one(tmp_path: Path) -> None:
    # A loaded parser's trees name their rules as plain strings, a built one's as lark
    # Tokens; cel-python's messages repeat them: `trellis worker` said 'relation_eq' where
    # the docs (and a process that built its parser) say '==' (found by an outside audit).
    outcome, built = _messages(tmp_path)
    assert outcome == "built and saved"
    assert _messages(tmp_path) == ("loaded", built)
    assert len(built) == len(_FAILING)
    assert built[0].endswith("found no matching overload for '==' applied to (double, int)")
    assert "relation_" not in "".join(built)


def test_a_torn_saved_parser_is_built_again_and_replaced(tmp_path: Path) -> None:
    _start(tmp_path)
    [saved] = _saved(tmp_path)
    saved.write_bytes(saved.read_bytes()[:1000])
    assert _start(tmp_path)["outcome"] == "built and saved"
    assert _start(tmp_path)["outcome"] == "loaded"


def test_a_parser_saved_by_other_versions_is_never_loaded(tmp_path: Path) -> None:
    _start(tmp_path)
    [saved] = _saved(tmp_path)
    # Another Lark or Python writes another name; a file of that name is simply not read.
    saved.rename(saved.with_name("cel-parser-0000000000000000.pickle"))
    assert _start(tmp_path)["outcome"] == "built and saved"
    assert len(_saved(tmp_path)) == 2


def test_a_cache_that_cannot_be_written_costs_only_the_build(tmp_path: Path) -> None:
    (tmp_path / "trellis").write_text("a file where the directory would be")
    assert _start(tmp_path)["outcome"] == "built, not saved"
    assert _start(tmp_path)["outcome"] == "built, not saved"
    assert (tmp_path / "trellis").read_text() == "a file where the directory would be"


def test_a_user_without_a_home_directory_has_no_cache_directory(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # A container's arbitrary user (no HOME, no passwd entry): Python's `Path.home()`
    # raises. Such a user cannot be made here (this Python lives in root's home), so the
    # raise is Python's, stood in for; a start then builds the parser and saves nothing.
    def no_home() -> Path:
        raise RuntimeError("Could not determine home directory.")

    monkeypatch.delenv("XDG_CACHE_HOME", raising=False)
    monkeypatch.setattr(Path, "home", staticmethod(no_home))
    assert cache_dir() is None


def test_a_relative_xdg_cache_home_is_ignored_for_the_home_directory(tmp_path: Path) -> None:
    home = tmp_path / "home"
    assert _start(tmp_path / "elsewhere", HOME=str(home), XDG_CACHE_HOME="rel")["outcome"] == (
        "built and saved"
    )
    assert _saved(home / ".cache")


async def test_the_api_and_the_worker_start_on_the_saved_parser(
    temporal_env: WorkflowEnvironment, tmp_path: Path, processes: Processes
) -> None:
    cache_home = tmp_path / "cache"
    _start(cache_home)
    [saved] = _saved(cache_home)
    written = saved.stat().st_mtime_ns
    env = process_env(
        tmp_path / "data",
        temporal_env.client.service_client.config.target_host,
        XDG_CACHE_HOME=str(cache_home),
        TRELLIS_LOG_LEVEL="debug",
    )
    api, worker = await asyncio.gather(
        asyncio.to_thread(processes.api, env), asyncio.to_thread(processes.worker, env)
    )
    for started in (api.process, worker):
        assert "CEL's parser: loaded" in started.output()
    assert saved.stat().st_mtime_ns == written
    # A run's CEL error, from the worker's loaded parser, in the words docs/semantics.md
    # gives (it said 'relation_eq': found by an outside audit).
    async with httpx.AsyncClient(base_url=api.url, timeout=10) as client:
        checked = condition("c", "input.amount == 2", echo("e"))
        wf, run_id = await create_and_trigger(client, {"nodes": [checked]}, {"amount": 2.0})
        run = await wait_for(client, wf, run_id, lambda r: r["status"] in TERMINAL)
    assert run["status"] == "failed", run
    assert run["errorSummary"].endswith(
        "found no matching overload for '==' applied to (double, int)"
    ), run["errorSummary"]
