"""`trellis workflows list | show | versions | apply | enable | disable | delete`."""

from __future__ import annotations

import sys
import unicodedata
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import click
import yaml
from rich.console import Group

from activities.yaml_problem import yaml_problem
from app.cli.api_client import if_match, segment
from app.cli.id_argument import ID
from app.cli.limits import page_options
from app.cli.output import Session, api_options, clean, compact, page_title, shown, table, when
from app.cli.unique_keys import load_yaml


@click.group()
def workflows() -> None:
    """Workflow definitions."""


@workflows.command("list")
@click.option("--query", default=None, help="only names or descriptions containing this")
@page_options(per_page=50)
@api_options
def list_workflows(session: Session, query: str | None, page: int, per_page: int) -> None:
    """Workflow definitions, newest-updated first."""
    answer = session.api.get("/workflows", query=query, page=page, perPage=per_page)
    session.emit(answer, _workflow_table)


def _workflow_table(data: dict[str, Any]) -> Any:
    rows = [
        [w["id"], w["name"], "yes" if w["enabled"] else "no", w["version"], w["numNodes"],
         when(w["updatedAt"])]
        for w in data["workflows"]
    ]  # fmt: skip
    return table(
        page_title("workflows", data["pagination"]),
        ["ID", "NAME", "ENABLED", "VERSION", "NODES", "UPDATED"],
        rows,
    )


@workflows.command("show")
@click.argument("workflow_id", type=ID)
@click.option("--version", "version", type=click.IntRange(min=1), default=None, metavar="N",
              help="a kept version (`trellis workflows versions ID`), not the current")  # fmt: skip
@api_options
def show_workflow(session: Session, workflow_id: str, version: int | None) -> None:
    """One definition with its node tree: the current version, or version N."""
    if version is None:
        session.emit(session.api.get(f"/workflows/{segment(workflow_id)}"), _workflow_detail)
    else:
        answer = session.api.get(f"/workflows/{segment(workflow_id)}/versions/{version}")
        session.emit(answer, _version_detail)


def _workflow_detail(data: dict[str, Any]) -> Any:
    head = shown(
        (data["name"], "bold"),
        f"  {data['id']}\n"
        f"version {data['version']}, {'enabled' if data['enabled'] else 'disabled'}, "
        f"updated {when(data['updatedAt'])}",
    )
    return Group(head, _node_table(data))


def _version_detail(data: dict[str, Any]) -> Any:
    head = shown(
        (data["name"], "bold"),
        f"  {data['workflowId']}\nversion {data['version']}, saved {when(data['createdAt'])}"
        f"{' by ' + data['createdBy'] if data.get('createdBy') else ''}",
    )
    return Group(head, _node_table(data))


def _node_table(data: dict[str, Any]) -> Any:
    rows = [[depth * "  " + (f"{where}: " if where else "") + n.get("name", ""),
             n.get("nodeType"), n.get("id"), _what(n)]
            for depth, where, n in _walk(data.get("nodes") or [])]  # fmt: skip
    return table(None, ["NODE", "TYPE", "ID", "RUNS"], rows)


@workflows.command("versions")
@click.argument("workflow_id", type=ID)
@api_options
def list_versions(session: Session, workflow_id: str) -> None:
    """Every kept version of a definition, oldest first (each save that changed it)."""
    answer = session.api.get(f"/workflows/{segment(workflow_id)}/versions")
    session.emit(answer, _version_table)


def _version_table(data: dict[str, Any]) -> Any:
    # `createdBy` is null for versions saved before it was recorded (and absent from an
    # older API's answer).
    rows = [[v["version"], v["name"], v["numNodes"], when(v["createdAt"]),
             v.get("createdBy") or "-", v.get("description")]
            for v in data["versions"]]  # fmt: skip
    columns = ["VERSION", "NAME", "NODES", "SAVED", "BY", "DESCRIPTION"]
    return table(f"versions ({len(rows)})", columns, rows)


def _walk(nodes: list[dict[str, Any]], depth: int = 0, where: str = "") -> Any:
    """Every node, depth first, with its depth and where it hangs, as the console's tree
    labels it ("if true", "route “left”", "branch 2" of a parallel node; "" for the first
    of a sequence it starts, a map's or a loop's body, the top level)."""
    for i, node in enumerate(nodes):
        yield depth, (where if i == 0 else ""), node
        children = node.get("children") or []
        if node.get("nodeType") == "parallel":
            for b, child in enumerate(children):
                yield from _walk([child], depth + 1, f"branch {b + 1}")
        else:
            yield from _walk(children, depth + 1)
        yield from _walk(node.get("trueSteps") or [], depth + 1, "if true")
        yield from _walk(node.get("falseSteps") or [], depth + 1, "if false")
        for choice in node.get("choices") or []:
            yield from _walk(choice.get("steps") or [], depth + 1, f"route “{choice.get('name')}”")


def _what(node: dict[str, Any]) -> str:
    return str(node.get("executorKey") or node.get("a2aPool") or "")


STDIN = "<stdin>"


@workflows.command("apply")
@click.option(
    "-f", "--file", "path",
    type=click.Path(exists=True, dir_okay=False, allow_dash=True),
    required=True, help="the definition, YAML or JSON (- reads it from stdin)",
)  # fmt: skip
@api_options
def apply_workflow(session: Session, path: str) -> None:
    """Create the definition, or update the one with its `id` (or, without one, its name)."""
    # Here, not at the top: the definition's model takes a third of a second to import,
    # which no other command needs.
    from app.cli.definition_lint import unknown_fields

    # Kept as typed (a Path would read `./-` as `-`, stdin); messages name stdin as such.
    source = STDIN if path == "-" else path
    definition = _read_definition(path, source)
    if not isinstance(definition, dict):
        # An empty file, a list: a bad input, as a mapping without name or nodes is.
        raise BadDefinition(f"{source}: a definition is a mapping (name, nodes, …)")
    if not definition.get("id") and definition.get("workflowId"):
        # A kept version as `show --version N --json` prints it: applied, it brings its
        # workflow back to that version (found by its name, a renamed one was made anew).
        definition = {**definition, "id": definition["workflowId"]}
    for where in unknown_fields(definition):
        click.echo(f"warning: {source}: {where} is not a field of a definition; ignored", err=True)
    enabled = definition.get("enabled")
    if "enabled" in definition and not isinstance(enabled, bool):
        # A create ignored `enabled: "yes"` without a word, an update was the API's 400.
        raise BadDefinition(
            f"{source}: enabled is true or false (or left out), not {compact(enabled, 40)}"
        )
    from app.cli.definition_defaults import required_left_out

    missing = required_left_out(definition)
    if missing:
        raise BadDefinition(
            f"{source}: {' and '.join(missing)} required (a definition file is the whole "
            "definition)"
        )
    existing = _existing_id(session, definition)
    body = {k: v for k, v in definition.items() if k not in _NOT_SENT}
    if existing is None:
        answer = session.api.post("/workflows", body)
        if enabled is True:
            # A create ignores `enabled` (a new workflow starts disabled) and an update
            # applies it: the file's `enabled: true` holds whichever of the two this is.
            answer = session.api.post(
                f"/workflows/{segment(answer.data['id'])}/toggle", {"enabled": True}
            )
        session.emit(answer, lambda w: f"created workflow {w['id']} (version {w['version']})")
        return
    from app.cli.definition_defaults import left_out
    from app.cli.node_ids import carry_ids

    read = session.api.get(f"/workflows/{segment(existing)}")
    stored = read.data
    carry_ids(_nodes(body), stored.get("nodes") or [])
    # The file is the definition: a field deleted from it must not keep its stored value.
    body.update(left_out(definition))
    # Under the read's ETag: the node ids carried over are those of the stored definition
    # as it is, not as someone's save in between left it (412, exit 1: apply again).
    answer = session.api.request(
        "PUT", f"/workflows/{segment(existing)}", json=body, headers=if_match(read)
    )
    session.emit(answer, lambda w: _applied(stored, w))


# What `show --json` prints beside the definition, which the API's bodies do not take.
_NOT_SENT = frozenset({"id", "workflowId", "createdBy"})


class BadDefinition(click.ClickException):
    """A definition the API would refuse or misread, refused before anything is sent."""

    exit_code = 2


def _applied(stored: dict[str, Any], now: dict[str, Any]) -> str:
    """What an update changed: the definition (a new version), its being enabled, or
    nothing. Enabling or disabling makes no new version, yet it is a change."""
    toggled = "enabled" if now["enabled"] else "disabled"
    if now["version"] != stored["version"]:
        also = f"; {toggled}" if now["enabled"] != stored["enabled"] else ""
        return f"updated workflow {now['id']} (version {now['version']}){also}"
    if now["enabled"] != stored["enabled"]:
        return f"workflow {now['id']} {toggled}; definition unchanged (version {now['version']})"
    return f"workflow {now['id']} unchanged (version {now['version']})"


def _nodes(body: dict[str, Any]) -> list[Any]:
    nodes = body.get("nodes")
    return nodes if isinstance(nodes, list) else []


def _read_definition(path: str, source: str) -> Any:
    """The file's YAML (or JSON, which is YAML); a file that is neither, or names a key twice
    in one mapping, is a one-line error naming `source`."""
    try:
        if path == "-":
            text = sys.stdin.read()
            text.encode("utf-8")  # bytes that are not UTF-8 come as lone surrogates
            return load_yaml(text)
        return load_yaml(Path(path).read_text(encoding="utf-8"))
    except (UnicodeDecodeError, UnicodeEncodeError) as exc:
        raise click.ClickException(f"{source}: not UTF-8 text ({exc.reason})") from None
    except yaml.YAMLError as exc:
        raise click.ClickException(f"{source}: not valid YAML or JSON{yaml_problem(exc)}") from None


def _existing_id(session: Session, definition: dict[str, Any]) -> str | None:
    """The id of the definition to update: the file's `id` if it names one, else the one
    of the same name."""
    from app.cli.api_client import ApiError

    if definition.get("id"):
        try:
            return str(session.api.get(f"/workflows/{segment(definition['id'])}").data["id"])
        except ApiError as exc:
            # 400: no id the API gives has that form (`bad id!`), so none has it.
            if not str(exc).startswith(("404", "400")):
                raise
        # The API gives ids: a create keeps none, so the next apply of this file would
        # not find it by its id. The name finds it then, as for a file without one.
        click.echo(
            f"warning: no workflow has the id {definition['id']!r}; "
            "applying by name (the API gives a new workflow its id)",
            err=True,
        )
    name = definition.get("name")
    if not name:
        return None
    # As the API keeps a name: composed (NFC) and trimmed ("Café " in the file is "Café").
    name = unicodedata.normalize("NFC", str(name)).strip()
    same = [w["id"] for w in _named_like(session, name) if w["name"] == name]
    if len(same) > 1:
        raise click.ClickException(f"{len(same)} workflows are named {name!r}; give the file an id")
    return same[0] if same else None


def _named_like(session: Session, name: str) -> Iterator[dict[str, Any]]:
    """Every workflow whose name or description contains `name`, page by page: the one
    named `name` exactly may be past the first page (`pg` among a hundred `pg-…`)."""
    page = 1
    while True:
        data = session.api.get("/workflows", query=name, page=page, perPage=100).data
        yield from data["workflows"]
        if page >= data["pagination"]["totalPages"]:
            return
        page += 1


def _toggle(session: Session, workflow_id: str, enabled: bool) -> None:
    answer = session.api.post(f"/workflows/{segment(workflow_id)}/toggle", {"enabled": enabled})
    session.emit(
        answer, lambda w: f"workflow {w['id']} {'enabled' if w['enabled'] else 'disabled'}"
    )


@workflows.command("enable")
@click.argument("workflow_id", type=ID)
@api_options
def enable_workflow(session: Session, workflow_id: str) -> None:
    """Enable a definition (runs may start)."""
    _toggle(session, workflow_id, True)


@workflows.command("disable")
@click.argument("workflow_id", type=ID)
@api_options
def disable_workflow(session: Session, workflow_id: str) -> None:
    """Disable a definition (no new runs start)."""
    _toggle(session, workflow_id, False)


@workflows.command("delete")
@click.argument("workflow_id", type=ID)
@click.option(
    "--yes", "-y", is_flag=True, help="delete without asking (needed when not on a terminal)"
)
@api_options
def delete_workflow(session: Session, workflow_id: str, yes: bool) -> None:
    """Delete a definition with every version, schedule and run; its open runs are cancelled.

    Asks first on a terminal; elsewhere (a pipe, a script) it deletes only with --yes."""
    if not yes and not sys.stdin.isatty():
        # Nothing to ask on: a script that meant it says --yes; one that did not loses nothing.
        raise click.UsageError(
            f"not deleting workflow {workflow_id!r}: there is no terminal to confirm on; "
            "give --yes to delete it with its versions, schedules and runs"
        )
    if not yes:
        # Read first: an unknown id is the API's 404 before anything is asked.
        found = session.api.get(f"/workflows/{segment(workflow_id)}").data
        question = (
            # Quoted by hand: repr() would escape clean's `\x1b` a second time (`\\x1b`).
            f"Delete workflow '{clean(found['name'], one_line=True)}' ({found['id']}) with its "
            "versions, schedules and runs (its open runs are cancelled)?"
        )
        if not click.confirm(question, default=False, err=True):
            raise click.ClickException(f"workflow {workflow_id} not deleted")
    answer = session.api.request("DELETE", f"/workflows/{segment(workflow_id)}")
    session.emit(answer, lambda _: shown(f"deleted workflow {workflow_id}"))
