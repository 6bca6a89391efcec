"""The catalog file: what loads, and every way a bad file is refused with its name and problem."""

from __future__ import annotations

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
