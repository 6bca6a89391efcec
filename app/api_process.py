"""One of the API processes `trellis api --api-workers N` starts: uvicorn imports this
module in each (`app.api_process:app_from_env`) and calls the factory.

Such a process starts from nothing, so the factory first does what `trellis api` does
before it imports the app: logging from the same `TRELLIS_*` settings (our text or JSON
lines, as the parent's, not uvicorn's own format), and CEL's parser from the user's
cache (importing the app builds it otherwise: app/cel_parser.py). This module imports
neither the app nor CEL's users at import time.
"""

from __future__ import annotations

import logging
import multiprocessing
import os
from typing import TYPE_CHECKING

from app.cel_parser import use_saved_cel_parser
from app.logs import configure_logging
from app.platform.supervisor import die_with_parent
from app.settings import get_settings

if TYPE_CHECKING:
    from fastapi import FastAPI

log = logging.getLogger(__name__)


def app_from_env() -> FastAPI:
    """The app configured from `TRELLIS_*` variables; the processes share their metrics
    through the directory `trellis api` names in `PROMETHEUS_MULTIPROC_DIR`
    (app/api_metrics.py)."""
    _die_with_parent()
    settings = get_settings()
    configure_logging(settings.log_level, settings.log_format)
    parser = use_saved_cel_parser()
    from app.api_metrics import MULTIPROC_DIR_VARIABLE, ApiMetrics
    from app.main import create_app
    from app.tracing import API_SERVICE, start_tracing

    log.debug("CEL's parser: %s", parser)
    metrics = ApiMetrics(multiprocess_dir=os.environ.get(MULTIPROC_DIR_VARIABLE) or None)
    return create_app(
        settings,
        api_metrics=metrics,
        tracer_provider=start_tracing(API_SERVICE),
        own_process=True,
    )


def _die_with_parent() -> None:
    """SIGTERM (a graceful stop) when `trellis api` dies, even by SIGKILL: uvicorn's
    processes outlived it, re-parented, still serving on the port, so its restart found
    the port taken. One whose parent died before this ran exits now."""
    die_with_parent()
    parent = multiprocessing.parent_process()
    if parent is not None and os.getppid() != parent.pid:
        os._exit(0)
