"""`trellis api` and `trellis worker`, given only the standard OTEL_EXPORTER_OTLP_ENDPOINT,
each export their spans over OTLP/HTTP, and a run is one trace across both processes."""

from __future__ import annotations

import uuid
from pathlib import Path

import httpx
from temporalio.testing import WorkflowEnvironment

from tests.builders import http_step
from tests.support.http_peer import HttpPeer
from tests.support.otlp_receiver import OtlpReceiver, ReceivedSpan
from tests.support.polling import eventually
from tests.support.processes import Processes, process_env
from tests.support.server import serving

TRIGGER = "POST /api/v1/workflows/{workflow_id}/runs"


async def test_api_and_worker_processes_export_one_trace_per_run(
    temporal_env: WorkflowEnvironment, tmp_path: Path, processes: Processes
) -> None:
    receiver, peer = OtlpReceiver(), HttpPeer()
    async with serving(receiver.app()) as collector, serving(peer.app) as peer_url:
        env = process_env(
            tmp_path,
            temporal_env.client.service_client.config.target_host,
            OTEL_EXPORTER_OTLP_ENDPOINT=collector,
            OTEL_BSP_SCHEDULE_DELAY="100",
            TRELLIS_HTTP_ALLOWED_NETWORKS="127.0.0.0/8",
        )
        api_process = await processes.api_and_worker(env)
        async with httpx.AsyncClient(base_url=api_process.url, timeout=10) as api:
            definition = {
                "name": f"traced-{uuid.uuid4().hex[:8]}",
                "nodes": [http_step("Call", f"{peer_url}/echo/otlp")],
            }
            wf = (await api.post("/api/v1/workflows", json=definition)).json()["id"]
            await api.post(f"/api/v1/workflows/{wf}/toggle", json={"enabled": True})
            # A token a caller put in the URL by mistake is masked in the span, as in the log.
            triggered = await api.post(
                f"/api/v1/workflows/{wf}/runs?access_token=s3cr3t", json={"initialInput": {}}
            )
            assert triggered.status_code == 202, triggered.text

            def exported() -> dict[str, ReceivedSpan] | None:
                names = {s.name: s for s in receiver.spans}
                wanted = (TRIGGER, "StartWorkflow:TrellisRun", "RunWorkflow:TrellisRun", "POST")
                return names if all(n in names for n in wanted) else None

            spans = await eventually(exported, within=30)

    trigger = spans[TRIGGER]
    assert trigger.service == "trellis-api"
    assert trigger.attributes["url.query"] == "access_token=***"
    assert spans["StartWorkflow:TrellisRun"].service == "trellis-api"
    assert spans["RunWorkflow:TrellisRun"].service == "trellis-worker"
    assert spans["POST"].service == "trellis-worker"
    assert {spans[n].trace_id for n in spans if n in (TRIGGER, "POST")} == {trigger.trace_id}
    # The worker's spans hang under the API's start of the workflow.
    assert spans["RunWorkflow:TrellisRun"].parent_id == spans["StartWorkflow:TrellisRun"].span_id
    # Probes and scrapes are not traced.
    assert not [s for s in receiver.spans if s.name.endswith(("/readyz", "/healthz"))]
