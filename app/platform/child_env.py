"""Hand resolved settings to child processes as `TRELLIS_*` environment variables."""

from __future__ import annotations

import json
import os
from pathlib import Path

from pydantic import SecretStr

from app.settings import Settings


def settings_env(settings: Settings, base: dict[str, str] | None = None) -> dict[str, str]:
    """`base` (default: our environment) with every setting replaced by its resolved value
    and no other `TRELLIS_*` variable."""
    prefix = str(settings.model_config.get("env_prefix", "TRELLIS_"))
    # Names are read in any case. An unknown one was warned about by the supervisor; a
    # child does not say it again, and a setting spelt in lower case does not shadow ours.
    env = {
        key: value
        for key, value in (os.environ if base is None else base).items()
        if not key.upper().startswith(prefix)
    }
    as_json = settings.model_dump(mode="json")
    for name in type(settings).model_fields:
        value = getattr(settings, name)
        key = f"{prefix}{name.upper()}"
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
