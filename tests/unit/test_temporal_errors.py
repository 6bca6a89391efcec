"""Temporal's RPC errors as API errors: too slow or down is a 503, never a 500."""

from __future__ import annotations

import httpx
import pytest
from fastapi import FastAPI
from temporalio.service import RPCError, RPCStatusCode

from app.errors import RunRefused, ScheduleRefused, install_error_handlers

# What the SDK's client raises when a call outruns its own deadline (tonic's timeout).
CLIENT_TIMEOUT = RPCError("Timeout expired", RPCStatusCode.CANCELLED, b"")


def _app(exc: Exception) -> FastAPI:
    app = FastAPI()
    install_error_handlers(app)

    @app.get("/fail")
    async def fail() -> None:
        raise exc

    return app


async def _get(exc: Exception) -> httpx.Response:
    transport = httpx.ASGITransport(app=_app(exc), raise_app_exceptions=False)
    async with httpx.AsyncClient(transport=transport, base_url="http://test") as client:
        return await client.get("/fail")


@pytest.mark.parametrize(
    "exc",
    [
        pytest.param(CLIENT_TIMEOUT, id="rpc"),
        pytest.param(ScheduleRefused(CLIENT_TIMEOUT), id="schedule"),
        pytest.param(RunRefused("run-1", CLIENT_TIMEOUT), id="run"),
        pytest.param(RPCError("down", RPCStatusCode.UNAVAILABLE, b""), id="unavailable"),
    ],
)
async def test_a_call_temporal_did_not_answer_in_time_is_503(exc: Exception) -> None:
    response = await _get(exc)
    assert response.status_code == 503, response.text
    error = response.json()["error"]
    assert error["code"] == "service_unavailable"
    assert error["message"].startswith("Temporal is unreachable: ")


async def test_an_update_refused_while_the_runs_workflow_task_fails_is_503() -> None:
    # What the dev server answers an update once the run's workflow task has failed
    # repeatedly (checked against it); it was a 500 "Temporal refused the request".
    refused = RPCError(
        "Unable to perform workflow execution update due to Workflow Task in failed state.",
        RPCStatusCode.FAILED_PRECONDITION,
        b"",
    )
    response = await _get(RunRefused("run-1", refused))
    assert response.status_code == 503, response.text
    error = response.json()["error"]
    assert error["code"] == "service_unavailable"
    assert error["message"].startswith("Run run-1 cannot take this now: its workflow task is")


async def test_any_other_cancelled_call_is_still_a_500() -> None:
    response = await _get(RPCError("cancelled by peer", RPCStatusCode.CANCELLED, b""))
    assert response.status_code == 500
    assert response.json()["error"]["code"] == "internal_error"
