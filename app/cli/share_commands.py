"""`trellis workflows share`: who may see and change a workflow (its owner and grants,
docs/security.md), read, or changed grant by grant."""

from __future__ import annotations

from typing import Any

import click
from rich.console import Group

from app.cli.api_client import if_match, segment
from app.cli.id_argument import ID
from app.cli.limits import PERMISSIONS, PRINCIPAL
from app.cli.output import Session, api_options, shown, table
from temporal_workflows.principals import principal_problem


def _grant(value: str) -> tuple[str, list[str]]:
    """`PRINCIPAL=PERM[,PERM…]` as the principal and its permissions (upper-cased)."""
    principal, equals, listed = value.rpartition("=")
    permissions = [p.strip().upper() for p in listed.split(",") if p.strip()]
    if not equals or not principal or not permissions:
        raise click.BadParameter(
            f"{value[:140]!r} is not PRINCIPAL=PERMISSION[,PERMISSION…] "
            "(e.g. user:bob=EDIT or role:ops=VIEW,SHARE)",
            param_hint="--grant",
        )
    unknown = [p for p in permissions if p not in PERMISSIONS]
    if unknown:
        raise click.BadParameter(
            f"{', '.join(unknown)[:140]} in {value[:140]!r}: a permission is one of "
            f"{', '.join(PERMISSIONS)}",
            param_hint="--grant",
        )
    _principal(principal, "--grant")
    if problem := principal_problem(principal):
        # The API's rule (docs/security.md, "Principals"); --revoke takes any, so a
        # grant stored before the rule was stricter can still be taken back.
        raise click.BadParameter(f"{principal[:140]!r}: {problem}", param_hint="--grant")
    return principal, permissions


def _held(permissions: list[str]) -> frozenset[str]:
    """What a grant of `permissions` holds: VIEW comes with any (docs/security.md)."""
    return frozenset(permissions) | {"VIEW"}


def _principal(value: str, option: str) -> str:
    """`user:ID` or `role:NAME`, as the API takes them (a bare `bob` it refuses)."""
    if not PRINCIPAL.fullmatch(value):
        raise click.BadParameter(
            f"{value[:140]!r} is not a principal: user:ID or role:NAME",
            param_hint=option,
        )
    return value


@click.command("share")
@click.argument("workflow_id", type=ID)
@click.option("--grant", "grants", multiple=True, metavar="PRINCIPAL=PERM[,PERM…]",
              help="give user:ID or role:NAME exactly these of VIEW, EDIT, DELETE, SHARE "
                   "(VIEW comes with any; repeatable)")  # fmt: skip
@click.option("--revoke", "revokes", multiple=True, metavar="PRINCIPAL",
              help="take every permission from user:ID or role:NAME (repeatable)")  # fmt: skip
@api_options
def share(
    session: Session, workflow_id: str, grants: tuple[str, ...], revokes: tuple[str, ...]
) -> None:
    """Show a workflow's owner and grants; with --grant or --revoke, change them.

    A grant replaces what the principal held; grants not named are kept. The API's PUT
    replaces every grant, so this reads them and sends them back changed, naming the read's
    ETag: a change someone makes in between is kept and this fails (412, exit 1); run it
    again to apply the grants to what is there then."""
    given: dict[str, list[str]] = {}
    for principal, permissions in map(_grant, grants):
        # The same permissions in another order, or with the VIEW any of them brings,
        # are the same grant.
        if _held(given.setdefault(principal, permissions)) != _held(permissions):
            # Two grants of one principal contradict each other: the last one silently won.
            raise click.UsageError(f"{principal}: granted twice, differently; give one --grant")
    for principal in revokes:
        _principal(principal, "--revoke")
    both = sorted(set(given) & set(revokes))
    if both:
        raise click.UsageError(f"{', '.join(both)}: both granted and revoked")
    path = f"/workflows/{segment(workflow_id)}/permissions"
    answer = session.api.get(path)
    if given or revokes:
        held = {g["principal"]: g["permissions"] for g in answer.data["grants"]}
        for principal in revokes:
            if held.pop(principal, None) is None:
                click.echo(f"warning: {principal} has no grant on {workflow_id}", err=True)
        held.update(given)
        body = {"grants": [{"principal": p, "permissions": ps} for p, ps in held.items()]}
        answer = session.api.request("PUT", path, json=body, headers=if_match(answer))
    session.emit(answer, _permissions)


def _permissions(data: dict[str, Any]) -> Any:
    head = shown(f"workflow {data['workflowId']}, owned by ", (data["owner"], "bold"))
    rows = [[g["principal"], ", ".join(g["permissions"])] for g in data["grants"]]
    return Group(head, table(f"grants ({len(rows)})", ["PRINCIPAL", "PERMISSIONS"], rows))


COMMANDS = (share,)
