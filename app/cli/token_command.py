"""`trellis token`: print an HS256 token signed with TRELLIS_JWT_SECRET (for `jwt` mode)."""

from __future__ import annotations

from typing import Any

import click

from app.cli.bad_value import BadValue
from app.cli.settings_options import settings_flags, settings_from, settings_help

WIDE = {"max_content_width": 100}


def _usable_sub(ctx: click.Context, param: click.Parameter, sub: str) -> str:
    from app.auth.subject import unnameable

    if odd := unnameable(sub):
        raise click.BadParameter(f"{odd}; the API refuses such a token")
    return sub


def _known_scopes(ctx: click.Context, param: click.Parameter, value: str) -> list[str]:
    """The scopes the API grants: a typo (`workflows-reed`) or none at all minted a token
    every route then refused (403), with exit code 0."""
    from app.auth.caller import ALL_SCOPES
    from app.auth.minting import split_list

    known = f"the scopes are {', '.join(ALL_SCOPES)} (comma-separated)"
    scopes = split_list(value)
    if not scopes:
        raise BadValue(value, f"name at least one scope; {known}", ctx, param)
    for scope in scopes:
        if scope not in ALL_SCOPES:
            raise BadValue(scope, f"not a scope; {known}", ctx, param)
    return scopes


@click.command(epilog=settings_help("token"), context_settings=WIDE)
@click.option(
    "--sub", required=True, callback=_usable_sub, help="the user id (the token's subject)"
)
@click.option(
    "--scopes", required=True, callback=_known_scopes,
    help="comma-separated, of workflows-read, workflows-write, workflows-control, "
    "workflows-share",
)  # fmt: skip
@click.option("--roles", default=None, help="comma-separated, e.g. ops,finance")
@click.option("--name", default=None, help="display name")
@click.option("--ttl", type=click.IntRange(min=1), default=3600, show_default=True,
              help="lifetime in seconds")  # fmt: skip
@settings_flags("token")
def token(
    sub: str, scopes: list[str], roles: str | None, name: str | None, ttl: int, **params: Any
) -> int:
    """Print one token signed with TRELLIS_JWT_SECRET (HS256), for trying
    TRELLIS_AUTH_MODE=jwt and for scripts. Issuer, audience and claim names follow the
    TRELLIS_JWT_* settings (or their flags below), as the API checks them, so the API
    accepts it."""
    from app.auth.minting import mint_token, split_list

    click.echo(
        mint_token(
            settings_from(params),
            sub=sub,
            scopes=scopes,
            roles=split_list(roles),
            name=name,
            ttl_seconds=ttl,
        )
    )
    return 0
