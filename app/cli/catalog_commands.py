"""`trellis catalog servers | agents`: the executors the API's catalog names (MCP servers
and A2A agents) and what it last heard from each."""

from __future__ import annotations

from typing import Any

import click
from rich.text import Text

from app.cli.output import Session, api_options, shown, table, when

HEALTH_STYLE = {"up": "green", "down": "red", "unknown": "dim"}


@click.group()
def catalog() -> None:
    """The executor catalog: MCP servers and A2A agents."""


refresh_option = click.option(
    "--refresh", is_flag=True, help="ask every server and agent again before answering"
)


@catalog.command("servers")
@refresh_option
@api_options
def list_servers(session: Session, refresh: bool) -> None:
    """MCP servers: status, tools, where they are (the last refresh's, unless --refresh)."""
    answer = session.api.get("/servers", refresh=refresh or None)
    session.emit(answer, _server_table)


def _server_table(servers: list[dict[str, Any]]) -> Any:
    _a_list(servers)
    rows = [
        [s["id"], _health(s["status"]), len(s["tools"]), s["toolsSource"], s["transport"],
         _where(s), when(s.get("checkedAt")), s.get("error")]
        for s in servers
    ]  # fmt: skip
    columns = ["ID", "STATUS", "TOOLS", "LISTED", "TRANSPORT", "AT", "CHECKED", "ERROR"]
    return table(f"MCP servers ({len(rows)})", columns, rows)


def _where(server: dict[str, Any]) -> str | None:
    command = server.get("command")
    return " ".join(command) if command else server.get("url")


@catalog.command("agents")
@refresh_option
@api_options
def list_agents(session: Session, refresh: bool) -> None:
    """A2A agents: status, skills, card (the last refresh's, unless --refresh)."""
    answer = session.api.get("/agents", refresh=refresh or None)
    session.emit(answer, _agent_table)


def _agent_table(agents: list[dict[str, Any]]) -> Any:
    _a_list(agents)
    rows = [
        [a["name"], _health(a["status"]), len(a["skills"]), ", ".join(s["id"] for s in a["skills"]),
         _yes_no(a.get("streaming")), a["url"], when(a.get("checkedAt")), a.get("error")]
        for a in agents
    ]  # fmt: skip
    columns = ["NAME", "STATUS", "SKILLS", "SKILL IDS", "STREAMING", "URL", "CHECKED", "ERROR"]
    return table(f"A2A agents ({len(rows)})", columns, rows)


def _a_list(answer: Any) -> None:
    """The API answers a list: an object (`{}`, iterated as its keys) read as no server
    said nothing was wrong. Its TypeError is an answer not the API's (api_client.py)."""
    if not isinstance(answer, list):
        raise TypeError(f"a list is due, not {type(answer).__name__}")


def _health(status: str) -> Text:
    return shown((status, HEALTH_STYLE.get(status, "")))


def _yes_no(value: bool | None) -> str | None:
    return None if value is None else ("yes" if value else "no")
