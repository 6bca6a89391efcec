"""Where a run is in Temporal, as the console's run page says it: the Temporal workflow id
(a run's id is its workflow's id) and the Web UI's page of it, when the platform has one."""

from __future__ import annotations

from urllib.parse import quote

from app.cli.api_client import TrellisApi

# The console's facts of this platform (app/console/routes.py): no scope, nothing secret.
CONSOLE_CONFIG = "/console/config.json"


def temporal_line(api: TrellisApi, run_id: str) -> str:
    """`temporal: <Web UI link>`; the workflow id alone when the platform has no Web UI
    configured, or when its console's facts cannot be read (a proxy serving /api only)."""
    config = api.console_config(CONSOLE_CONFIG)
    if config is None:
        return f"temporal workflow id: {run_id}"
    ui = config.get("temporalUiUrl")
    if not (isinstance(ui, str) and ui):
        return f"temporal workflow id: {run_id} (no Temporal Web UI: TRELLIS_TEMPORAL_UI_URL)"
    namespace = quote(str(config.get("temporalNamespace") or "default"), safe="")
    return f"temporal: {ui.rstrip('/')}/namespaces/{namespace}/workflows/{quote(run_id, safe='')}"
