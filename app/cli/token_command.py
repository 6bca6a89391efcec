"""`trellis token`: print an HS256 token signed with TRELLIS_JWT_SECRET (for `jwt` mode)."""

from __future__ import annotations

from typing import Any

import click

from app.cli.settings_options import settings_flags, settings_from, settings_help

WIDE = {"max_content_width": 100}


def _usable_sub(ctx: click.Context, param: click.Parameter, sub: str) -> str:
    from app.auth.subject import unnameable

    if odd := unnameable(sub):
        raise click.BadParameter(f"{odd}; the API refuses such a token")
    return sub


@click.command(epilog=settings_help("token"), context_settings=WIDE)
@click.option(
    "--sub", required=True, callback=_usable_sub, help="the user id (the token's subject)"
)
@click.option(
    "--scopes", required=True, help="comma-separated, e.g. workflows-read,workflows-write"
)
@click.option("--roles", default=None, help="comma-separated, e.g. ops,finance")
@click.option("--name", default=None, help="display name")
@click.option("--ttl", type=click.IntRange(min=1), default=3600, show_default=True,
              help="lifetime in seconds")  # fmt: skip
@settings_flags("token")
def token(
    sub: str, scopes: str, roles: str | None, name: str | None, ttl: int, **params: Any
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
            scopes=split_list(scopes),
            roles=split_list(roles),
            name=name,
            ttl_seconds=ttl,
        )
    )
    return 0
