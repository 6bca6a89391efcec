"""The catalog file: what loads, and every way a bad file is refused with its name and problem."""

from __future__ import annotations

import logging
import os
from pathlib import Path

import pytest

from activities.executors.catalog import CatalogError, load_catalog


def write(tmp_path: Path, text: str, name: str = "executors.yaml") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def refused(path: Path) -> str:
    with pytest.raises(CatalogError) as info:
        load_catalog(path)
    assert str(path) in str(info.value)
    return str(info.value)


def test_no_file_gives_only_builtins() -> None:
    catalog = load_catalog(None)
    assert catalog.servers() == [] and catalog.agents() == []
    assert catalog.resolve("builtin:echo") is not None


def test_yaml_file_loads_servers_and_agents(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "mcpServers:\n"
        "  - {id: tools, url: 'http://127.0.0.1:9001/mcp', tools: [mcp-email-sender]}\n"
        "  - {id: local, command: [python, -m, my_tools]}\n"
        "a2aAgents:\n  - {name: account-manager-v1, url: 'http://127.0.0.1:9101/'}\n",
    )
    catalog = load_catalog(path)
    assert [(s.id, s.transport) for s in catalog.servers()] == [
        ("tools", "streamable-http"),
        ("local", "stdio"),
    ]
    assert catalog.is_known_agent("account-manager-v1")


def test_json_file_loads(tmp_path: Path) -> None:
    path = write(tmp_path, '{"a2aAgents": [{"name": "a", "url": "http://x/"}]}', "e.json")
    assert load_catalog(path).is_known_agent("a")


def test_missing_file_is_refused(tmp_path: Path) -> None:
    assert "file not found" in refused(tmp_path / "nope.yaml")


def test_bad_yaml_is_refused(tmp_path: Path) -> None:
    assert "invalid YAML" in refused(write(tmp_path, "mcpServers: [unclosed\n"))


def test_a_file_that_does_not_parse_is_refused_saying_where_and_never_what_is_there(
    tmp_path: Path,
) -> None:
    """TRELLIS_EXECUTORS_FILE pointed at the wrong file (a `.env`, a credentials file): the
    error goes to a terminal and a log, so it names the line, not the line's text."""
    secret = "s3cr3t-Value-91"
    yaml_file = write(tmp_path, f"API_KEY={secret}\nPASSWORD: {secret}: [oops\n", "env.yaml")
    message = refused(yaml_file)
    assert message.endswith("invalid YAML at line 2, column 9: mapping values are not allowed here")
    json_file = write(tmp_path, f'{{"password": "{secret}', "creds.json")
    message = refused(json_file)
    assert "invalid JSON: Unterminated string starting at: line 1 column 14" in message
    assert secret not in refused(yaml_file) + message
    # A character PyYAML refuses outright has no line to name.
    control = write(tmp_path, f"token: \x01{secret}\n", "control.yaml")
    assert refused(control).endswith("invalid YAML: unacceptable character #x0001: special "
                                      "characters are not allowed")  # fmt: skip
    assert secret not in refused(control)


def test_unknown_key_is_refused(tmp_path: Path) -> None:
    message = refused(write(tmp_path, "mcpServers: []\nagents: []\n"))
    assert "unknown key(s) agents" in message


def test_unknown_server_key_is_refused(tmp_path: Path) -> None:
    path = write(tmp_path, "mcpServers:\n  - {id: s, url: 'http://h/mcp', port: 1}\n")
    assert "mcpServers[0] has unknown key(s) port" in refused(path)


def test_server_with_url_and_command_is_refused(tmp_path: Path) -> None:
    path = write(tmp_path, "mcpServers:\n  - {id: s, url: 'http://h/mcp', command: [x]}\n")
    assert "exactly one of url" in refused(path)


def test_server_with_neither_url_nor_command_is_refused(tmp_path: Path) -> None:
    assert "exactly one of url" in refused(write(tmp_path, "mcpServers:\n  - {id: s}\n"))


def test_duplicate_server_ids_are_refused(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "mcpServers:\n  - {id: s, url: 'http://a/mcp'}\n  - {id: s, url: 'http://b/mcp'}\n",
    )
    assert "repeats the id(s) s" in refused(path)


def test_duplicate_agent_names_are_refused(tmp_path: Path) -> None:
    path = write(
        tmp_path, "a2aAgents:\n  - {name: a, url: 'http://a/'}\n  - {name: a, url: 'http://b/'}\n"
    )
    assert "repeats the name(s) a" in refused(path)


def test_string_command_is_split_like_a_shell_keeping_a_quoted_argument(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "mcpServers:\n  - id: local\n    command: python -m my_tools --greeting 'hello world'\n",
    )
    [server] = load_catalog(path).servers()
    assert server.command == ["python", "-m", "my_tools", "--greeting", "hello world"]


def test_string_command_with_an_unclosed_quote_is_refused(tmp_path: Path) -> None:
    path = write(tmp_path, 'mcpServers:\n  - {id: s, command: "python -m \'my tools"}\n')
    assert "mcpServers[0].command: no closing quotation" in refused(path)


def test_every_problem_in_a_file_is_named_on_one_line(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "mcpServers:\n  - {id: 'a/b', url: 'ftp://h/mcp'}\na2aAgents:\n  - {name: a}\n",
    )
    message = refused(path)
    assert "\n" not in message
    assert "mcpServers[0].id: may hold letters, digits" in message
    assert "mcpServers[0].url: must be an http(s) URL" in message
    assert "a2aAgents[0].url: field required" in message


def test_a_repeated_id_is_named_beside_the_servers_own_problems(tmp_path: Path) -> None:
    # pydantic checks a list's repeats only once every entry of it is valid.
    path = write(
        tmp_path,
        "mcpServers:\n"
        "  - {id: x, url: 'http://a', command: [a]}\n"
        "  - {id: x, url: 'http://b'}\n"
        "  - {id: y}\n",
    )
    message = refused(path)
    assert message.endswith(
        ": mcpServers[0]: needs exactly one of url (streamable HTTP) or command (stdio); "
        "mcpServers[2]: needs exactly one of url (streamable HTTP) or command (stdio); "
        "mcpServers: repeats the id(s) x"
    )


def test_a_servers_transport_is_checked_beside_its_fields_problems(tmp_path: Path) -> None:
    # pydantic checks a server's transport only once its fields are valid.
    path = write(
        tmp_path,
        "mcpServers:\n"
        "  - {id: x, url: 'http://a', command: [a], colour: red}\n"
        "  - {id: x, url: 'ftp://b'}\n"
        "a2aAgents:\n  - {name: a, url: 'http://a/'}\n  - {name: a, url: 'ftp://a/'}\n",
    )
    problems = refused(path).split(": ", 1)[1].split("; ")
    assert problems == [
        "mcpServers[0] has unknown key(s) colour (allowed: command, env, headers, id, tools, url)",
        "mcpServers[0]: needs exactly one of url (streamable HTTP) or command (stdio)",
        "mcpServers[1].url: must be an http(s) URL",
        "mcpServers: repeats the id(s) x",
        "a2aAgents[1].url: must be an http(s) URL",
        "a2aAgents: repeats the name(s) a",
    ]


def test_a_url_password_beside_an_authorization_header_is_refused_naming_both(
    tmp_path: Path,
) -> None:
    # The password would go as Basic auth, in the same header: neither is chosen silently.
    # An entry whose fields fail (`colour`) is checked too; no value is quoted.
    path = write(
        tmp_path,
        "mcpServers:\n"
        "  - {id: s, url: 'http://bob:pa55@h/mcp', headers: {Authorization: 'Bearer t0k'}}\n"
        "a2aAgents:\n"
        "  - {name: a, url: 'http://bob:pa55@h/', headers: {authorization: t0k}, colour: red}\n",
    )
    message = refused(path)
    both = "url's user info is sent as Basic auth (an Authorization header) and headers.{}"
    assert message.split(": ", 1)[1].split("; ") == [
        "a2aAgents[0] has unknown key(s) colour (allowed: headers, name, url)",
        f"mcpServers[0]: {both.format('Authorization')} sets Authorization too: keep one of them",
        f"a2aAgents[0]: {both.format('authorization')} sets Authorization too: keep one of them",
    ]
    assert "pa55" not in message and "t0k" not in message


def test_a_url_password_alone_or_beside_other_headers_goes_as_basic_auth(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "mcpServers:\n  - {id: s, url: 'http://bob:pa55@h/mcp', headers: {X-Api-Key: k}}\n"
        "a2aAgents:\n  - {name: a, url: 'http://bob:pa55@h/'}\n  - {name: b, url: 'http://t0k@h/'}\n",
    )
    catalog = load_catalog(path)
    assert catalog.agent_endpoint("a").url == "http://h/"
    # A user name alone goes with an empty password, as curl sends it.
    assert catalog.agent_endpoint("b").headers == {"Authorization": "Basic dDBrOg=="}  # t0k:
    assert catalog.file.servers[0].endpoint.headers == {
        "X-Api-Key": "k",
        "Authorization": "Basic Ym9iOnBhNTU=",  # bob:pa55
    }


def test_a_repeat_among_valid_entries_is_named_once(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "mcpServers:\n  - {id: s, url: 'http://a/mcp'}\n  - {id: s, url: 'http://b/mcp'}\n"
        "a2aAgents:\n  - {name: a}\n",
    )
    message = refused(path)
    assert message.count("repeats the id(s) s") == 1
    assert "a2aAgents[0].url: field required" in message


def test_a_url_no_request_can_go_to_is_refused_naming_what_is_wrong(tmp_path: Path) -> None:
    # They started, and failed at each use with the client's words (an audit): `/servers`
    # said `OverflowError: connect(): port must be 0-65535.`, a "missing protocol" for a
    # URL that has one, or `MCPError: Not Found` for a path with a space.
    path = write(
        tmp_path,
        "mcpServers:\n"
        "  - {id: port, url: 'http://127.0.0.1:99999/mcp'}\n"
        "  - {id: nohost, url: 'http:///mcp'}\n"
        "  - {id: space, url: 'http://127.0.0.1:18110/m cp'}\n"
        "  - {id: scheme, url: 'htp:/127.0.0.1/mcp'}\n"
        "  - {id: notaport, url: 'http://bob:s3cret@h:s3cret/mcp'}\n"
        "a2aAgents:\n"
        "  - {name: port, url: 'http://127.0.0.1:99999/agents/a/'}\n"
        "  - {name: nohost, url: 'https://:8443/'}\n"
        "  - {name: ipv6, url: 'http://[::1/'}\n",
    )
    message = refused(path)
    assert message.split(": ", 1)[1].split("; ") == [
        "mcpServers[0].url: port 99999 must be a number from 1 to 65535",
        "mcpServers[1].url: has no host (http://HOST[:PORT]/PATH)",
        "mcpServers[2].url: holds a space (write it percent-encoded, %20)",
        "mcpServers[3].url: must be an http(s) URL",
        "mcpServers[4].url: its port must be a number from 1 to 65535",
        "a2aAgents[0].url: port 99999 must be a number from 1 to 65535",
        "a2aAgents[1].url: has no host (http://HOST[:PORT]/PATH)",
        "a2aAgents[2].url: has a malformed [IPv6] host",
    ]
    assert "s3cret" not in message


def test_a_url_is_checked_as_its_variables_resolve_it(tmp_path: Path) -> None:
    path = write(tmp_path, "a2aAgents:\n  - {name: a, url: 'http://${AGENT_HOST}/'}\n")
    with pytest.raises(CatalogError, match=r"a2aAgents\[0\]\.url: has no host"):
        load_catalog(path, environ={"AGENT_HOST": ""})
    catalog = load_catalog(path, environ={"AGENT_HOST": "127.0.0.1:9101"})
    assert catalog.agent_endpoint("a").url == "http://127.0.0.1:9101/"


async def test_a_catalog_file_rewritten_as_it_was_is_not_reported_as_changed(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    # Its modification time moved, its content did not: the process uses the file as it is.
    caplog.set_level(logging.WARNING, logger="activities.executors.catalog_source")
    text = "mcpServers:\n"
    path = write(tmp_path, text)
    catalog = load_catalog(path)
    os.utime(path, ns=(1, 1))
    await catalog.refresh()
    path.write_text(text + "a2aAgents:\n", encoding="utf-8")
    await catalog.refresh()
    path.write_text(text, encoding="utf-8")  # changed back: the next change is news again
    await catalog.refresh()
    path.write_text(text + "a2aAgents:\n", encoding="utf-8")
    await catalog.refresh()
    warned = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warned) == 2 and str(path) in warned[0].getMessage()
