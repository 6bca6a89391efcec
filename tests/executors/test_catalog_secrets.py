"""Catalog credentials: headers reach the real peers on every call, `${VAR}` resolves at
load (a missing one stops start-up naming it), a stdio server gets only its declared env
and PATH, and the catalog routes never show a header, an env value or a resolved secret."""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest
from fastapi import FastAPI

from activities.executors.base import TransientError
from activities.executors.catalog import Catalog, CatalogError, load_catalog
from activities.executors.registry import ExecutorRegistry
from app.auth.guard import Authenticator
from app.routes.catalog import router
from tests.executors.conftest import MakeCall
from tests.peers.catalog import PEER_API_KEY, Peers
from tests.peers.serving import ServedApp, free_port


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "executors.yaml"
    path.write_text(text, encoding="utf-8")
    return path


class TestHeadersReachThePeers:
    async def test_an_mcp_server_gets_its_headers_on_every_call(
        self, registry: ExecutorRegistry, make_call: MakeCall, peers: Peers
    ) -> None:
        before = len(peers.mcp_requests.seen("tools/call"))
        for n in range(2):
            await registry.execute(make_call("peer-http/add", {"a": n, "b": 1}))
        calls = peers.mcp_requests.seen("tools/call")[before:]
        assert len(calls) == 2
        assert all(c.headers.get("x-api-key") == PEER_API_KEY for c in calls)

    async def test_an_agent_gets_its_headers_on_its_card_and_every_message(
        self, registry: ExecutorRegistry, make_call: MakeCall, peers: Peers
    ) -> None:
        await registry.execute(make_call("account-manager-v1", {"message": "hi"}))
        prefix = "/agents/account-manager-v1/"
        cards = peers.agent_requests.seen(path_prefix=f"{prefix}.well-known")
        messages = [r for r in peers.agent_requests.seen(path_prefix=prefix) if r.rpc_method]
        assert cards and messages
        assert all(r.headers.get("x-api-key") == PEER_API_KEY for r in cards + messages)

    async def test_a_polled_agent_gets_its_headers_on_every_poll(
        self, registry: ExecutorRegistry, make_call: MakeCall, peers: Peers
    ) -> None:
        await registry.execute(make_call("account-creator-v2", {"message": "hi"}))
        prefix = "/agents/account-creator-v2/"
        rpcs = [r for r in peers.agent_requests.seen(path_prefix=prefix) if r.rpc_method]
        assert {r.rpc_method for r in rpcs} >= {"SendMessage", "GetTask"}
        assert all(r.headers.get("x-api-key") == PEER_API_KEY for r in rpcs)


async def test_a_stdio_server_gets_only_its_declared_env_and_path(
    registry: ExecutorRegistry, make_call: MakeCall
) -> None:
    outcome = await registry.execute(make_call("peer-stdio/environment", {}))
    # Python sets LC_CTYPE itself in a C locale (PEP 538); nothing else is ours.
    assert set(outcome.output) - {"LC_CTYPE"} == {"PATH", "PEER_MODE"}
    assert outcome.output["PEER_MODE"] == "isolated"


def peer_script(directory: Path) -> Path:
    """A script starting the test MCP server (pass `--stdio`) from `directory`."""
    directory.mkdir()
    repo = Path(__file__).resolve().parents[2]
    script = directory / "peer.py"
    script.write_text(
        f"import sys\nsys.path.insert(0, {str(repo)!r})\n"
        "from tests.peers.mcp_server import main\nmain()\n",
        encoding="utf-8",
    )
    return script


async def test_a_stdio_server_starts_from_a_path_holding_a_space(
    tmp_path: Path, make_call: MakeCall
) -> None:
    script = peer_script(tmp_path / "my dir")
    path = write(tmp_path, "mcpServers:\n  - {id: spaced, command: '${PYTHON} ${PEER} --stdio'}\n")
    catalog = load_catalog(path, environ={"PYTHON": sys.executable, "PEER": str(script)})
    registry = ExecutorRegistry(catalog)
    try:
        await catalog.refresh()
        outcome = await registry.execute(make_call("spaced/add", {"a": 1, "b": 2}))
        assert outcome.output == {"total": 3}
    finally:
        await registry.close()


class TestVariables:
    def test_variables_resolve_at_load(self, tmp_path: Path) -> None:
        path = write(
            tmp_path,
            "mcpServers:\n"
            "  - id: tools\n"
            "    url: 'https://${MCP_HOST}/mcp'\n"
            "    headers: {Authorization: 'Bearer ${MCP_TOKEN}', X-Tenant: 7}\n"
            "  - id: local\n"
            "    command: [my-tools, '--profile', '${PROFILE}']\n"
            "    env: {API_KEY: '${LOCAL_KEY}', LITERAL: 'costs $${PRICE}'}\n",
        )
        environ = {"MCP_HOST": "mcp.example.com", "MCP_TOKEN": "t0k", "PROFILE": "prod"}
        catalog = load_catalog(path, environ={**environ, "LOCAL_KEY": "k3y"})
        remote, local = catalog.file.servers
        assert remote.url == "https://mcp.example.com/mcp"
        assert remote.headers == {"Authorization": "Bearer t0k", "X-Tenant": "7"}
        assert local.command == ["my-tools", "--profile", "prod"]
        assert local.env == {"API_KEY": "k3y", "LITERAL": "costs ${PRICE}"}

    def test_a_one_string_command_splits_before_its_variables_resolve(self, tmp_path: Path) -> None:
        # A value holding a space stays one argument; `$${` still writes a literal `${`.
        path = write(
            tmp_path,
            "mcpServers:\n"
            "  - id: local\n"
            "    command: '${PYTHON} ${SERVER} --name \"${NAME}\" --literal $${HOME}'\n",
        )
        environ = {"PYTHON": "python3", "SERVER": "/tmp/my dir/server.py", "NAME": "a b"}
        [local] = load_catalog(path, environ=environ).file.servers
        assert local.command == [
            "python3",
            "/tmp/my dir/server.py",
            "--name",
            "a b",
            "--literal",
            "${HOME}",
        ]

    def test_a_missing_variable_stops_loading_naming_it_and_where(self, tmp_path: Path) -> None:
        path = write(
            tmp_path,
            "a2aAgents:\n"
            "  - {name: a, url: 'https://a.example.com/', headers: {X-Api-Key: '${A_KEY}'}}\n"
            "  - {name: b, url: '${B_URL}'}\n",
        )
        with pytest.raises(CatalogError) as info:
            load_catalog(path, environ={"UNRELATED": "x"})
        assert str(info.value) == (
            f"executor catalog {path}: "
            "a2aAgents[0].headers.X-Api-Key: environment variable A_KEY is not set; "
            "a2aAgents[1].url: environment variable B_URL is not set"
        )

    def test_a_malformed_reference_is_refused(self, tmp_path: Path) -> None:
        path = write(tmp_path, "a2aAgents:\n  - {name: a, url: 'https://h/${not closed'}\n")
        with pytest.raises(CatalogError, match=r"a2aAgents\[0\]\.url: '\$\{' must start"):
            load_catalog(path, environ={})

    def test_without_an_environment_nothing_resolves(self, tmp_path: Path) -> None:
        path = write(tmp_path, "a2aAgents:\n  - {name: a, url: 'https://${HOST}/'}\n")
        with pytest.raises(CatalogError, match="environment variable HOST is not set"):
            load_catalog(path)


class TestHeadersAreChecked:
    @pytest.mark.parametrize(
        ("entry", "problem"),
        [
            (
                "mcpServers:\n  - {id: s, command: [x], headers: {A: b}}\n",
                "headers are for url servers",
            ),
            ("mcpServers:\n  - {id: s, url: 'http://h/', env: {A: b}}\n", "env is for command"),
            (
                "a2aAgents:\n  - {name: a, url: 'http://h/', headers: {'Bad Name': b}}\n",
                "a2aAgents[0].headers.'Bad Name' (the name): is not an HTTP header name",
            ),
            (  # a `$` let a final line end through; the message stays one line
                "a2aAgents:\n  - {name: a, url: 'http://h/', headers: {\"A\\n\": b}}\n",
                "a2aAgents[0].headers.'A\\n' (the name): is not an HTTP header name",
            ),
            (
                "a2aAgents:\n  - {name: a, url: 'http://h/', headers: {A: \"x\\r\\nB: y\"}}\n",
                "a2aAgents[0].headers.A: must be one line",
            ),
        ],
    )
    def test_refused(self, tmp_path: Path, entry: str, problem: str) -> None:
        with pytest.raises(CatalogError) as info:
            load_catalog(write(tmp_path, entry))
        assert problem in str(info.value)
        assert "\n" not in str(info.value)


class TestRoutesShowNoSecret:
    @pytest.fixture
    async def api(self, tmp_path: Path) -> AsyncIterator[httpx.AsyncClient]:
        path = write(
            tmp_path,
            "mcpServers:\n"
            "  - id: tools\n"
            "    url: 'http://127.0.0.1:9/mcp?key=${MCP_KEY}'\n"
            "    headers: {X-Api-Key: '${MCP_KEY}', Authorization: 'Bearer s3cret-inline'}\n"
            "  - {id: local, command: [my-tools, '${MCP_KEY}'], env: {TOKEN: 'env-s3cret'}}\n"
            "  - {id: spaced, command: 'my-tools --key ${ARG_KEY} \"a b\"'}\n"
            "a2aAgents:\n"
            "  - name: agent\n"
            "    url: 'http://bob:pa55word@127.0.0.1:9/'\n"
            "    headers: {X-Api-Key: 'agent-s3cret'}\n"
            "  - {name: token-agent, url: 'http://ghp_t0ken-s3cret@127.0.0.1:9/'}\n",
        )
        catalog = load_catalog(
            path, refresh_seconds=3600, environ={"MCP_KEY": "resolved-k3y", "ARG_KEY": "arg-s3cret"}
        )
        app = FastAPI()
        app.state.catalog = catalog
        app.state.authenticator = Authenticator(None)  # dev mode: the scope checks pass
        app.include_router(router)  # its paths carry /api/v1
        served = ServedApp(app).start()
        async with httpx.AsyncClient(base_url=served.base_url) as client:
            yield client
        served.stop()

    async def test_servers_show_values_as_written_and_no_header_or_env(
        self, api: httpx.AsyncClient
    ) -> None:
        response = await api.get("/api/v1/servers")
        assert response.status_code == 200
        secrets = ("resolved-k3y", "s3cret-inline", "env-s3cret", "arg-s3cret", "headers", "TOKEN")
        for secret in secrets:
            assert secret not in response.text
        tools, local, spaced = response.json()
        # Query values are masked, a `${VAR}` too: any may be a token written in the file.
        assert tools["url"] == "http://127.0.0.1:9/mcp?key=***"
        assert local["command"] == ["my-tools", "${MCP_KEY}"]
        # One string is split before its variables resolve; it is shown as written.
        assert spaced["command"] == ["my-tools", "--key", "${ARG_KEY}", "a b"]

    async def test_agents_show_no_header_and_no_password(self, api: httpx.AsyncClient) -> None:
        response = await api.get("/api/v1/agents")
        assert response.status_code == 200
        for secret in ("agent-s3cret", "pa55word", "ghp_t0ken-s3cret", "headers"):
            assert secret not in response.text
        agent, token_agent = response.json()
        assert agent["url"] == "http://bob:***@127.0.0.1:9/"
        # A user name written alone is the credential (a token): masked whole.
        assert token_agent["url"] == "http://***@127.0.0.1:9/"


async def test_errors_quoting_an_agent_url_show_it_as_written(
    tmp_path: Path, make_call: MakeCall
) -> None:
    # The A2A client's errors quote the URL it used: the resolved one, query and all (the
    # password goes as Basic auth: the client is given the URL without its user info).
    path = write(
        tmp_path,
        "a2aAgents:\n"
        f"  - name: down\n    url: 'http://bob:pa55word@127.0.0.1:{free_port()}/?key=${{KEY}}'\n",
    )
    catalog = load_catalog(path, refresh_seconds=3600, environ={"KEY": "resolved-k3y"})
    registry = ExecutorRegistry(catalog)
    try:
        await catalog.refresh()
        error = catalog.agent("down").error
        assert error is not None and "fetching agent card from http://127.0.0.1:" in error
        with pytest.raises(TransientError) as failed:
            await registry.execute(make_call("down"))
        for text in (error, str(failed.value)):
            assert "pa55word" not in text and "resolved-k3y" not in text
            assert "127.0.0.1" in text and "?key=***" in text
    finally:
        await registry.close()
        await catalog.close()


def test_the_catalog_repr_shows_no_header_or_env(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "mcpServers:\n"
        "  - {id: a, url: 'http://h/', headers: {X-Api-Key: k3y-in-repr}}\n"
        "  - {id: b, command: [x], env: {T: env-in-repr}}\n",
    )
    catalog: Catalog = load_catalog(path)
    assert "k3y-in-repr" not in repr(catalog.file) and "env-in-repr" not in repr(catalog.file)


def test_errors_are_masked_of_every_credential_but_values_too_short_to_be_one(
    tmp_path: Path,
) -> None:
    path = write(
        tmp_path,
        "mcpServers:\n"
        "  - id: a\n"
        "    url: 'http://h/mcp?k=${QUERY_KEY}'\n"
        "    headers: {Authorization: 'Bearer ${TOKEN}', X-Mode: 'on', Accept: text/plain,\n"
        "              X-Custom-Cred: literal-LITSECRET-5150, User-Agent: trellis-tests/1.0}\n"
        "  - {id: b, command: [x], env: {T: lit3ral-env, DEBUG: '1'}}\n"
        "a2aAgents:\n"
        "  - {name: c, url: 'http://bob:pa55@h/', headers: {X-Api-Key: agent-k3y}}\n",
    )
    catalog = load_catalog(path, environ={"TOKEN": "t0ken-value", "QUERY_KEY": "q-s3cret"})
    said = catalog.redacted(
        "refused t0ken-value, lit3ral-env, agent-k3y, q-s3cret and pa55 (mode on, DEBUG 1)"
        " as text/plain from trellis-tests/1.0 with literal-LITSECRET-5150"
    )
    # A literal value of a header whose name names no credential is one when it is long
    # enough (found by an audit: kept in full), unless its header is a plain one (`Accept`).
    assert said == (
        "refused ***, ***, ***, *** and *** (mode on, DEBUG 1) as text/plain"
        " from trellis-tests/1.0 with ***"
    )
