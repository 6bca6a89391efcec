"""Hand resolved settings to child processes as `TRELLIS_*` environment variables."""

from __future__ import annotations

import json
import os
from pathlib import Path

from pydantic import SecretStr

from app.settings import Settings


def settings_env(settings: Settings, base: dict[str, str] | None = None) -> dict[str, str]:
    """`base` (default: our environment) with every setting replaced by its resolved value."""
    env = dict(os.environ if base is None else base)
    prefix = str(settings.model_config.get("env_prefix", "TRELLIS_"))
    as_json = settings.model_dump(mode="json")
    for name in type(settings).model_fields:
        value = getattr(settings, name)
        key = f"{prefix}{name.upper()}"
        env.pop(key, None)
        if value is None:
            continue
        if isinstance(value, SecretStr):
            value = value.get_secret_value()  # the child needs the secret, not its mask
        elif isinstance(value, Path):
            # Children may run elsewhere; relative paths would silently point somewhere new.
            value = value.resolve()
        elif isinstance(value, bool):
            value = "true" if value else "false"
        elif isinstance(value, dict | list | tuple):
            value = json.dumps(as_json[name])  # how pydantic-settings reads complex values
        env[key] = str(value)
    # The store default depends on the data dir; pin it so every process opens the same file.
    env[f"{prefix}STORE_URL"] = settings.resolved_store_url
    return env
