"""A minimal OTLP/HTTP trace receiver (a collector's `POST /v1/traces`) for tests: it keeps
every span it is sent, with the name of the service that sent it."""

from __future__ import annotations

from dataclasses import dataclass, field

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route


@dataclass
class ReceivedSpan:
    service: str
    name: str
    trace_id: str
    span_id: str
    parent_id: str
    attributes: dict[str, str]


@dataclass
class OtlpReceiver:
    spans: list[ReceivedSpan] = field(default_factory=list)

    def app(self) -> Starlette:
        return Starlette(routes=[Route("/v1/traces", self._traces, methods=["POST"])])

    async def _traces(self, request: Request) -> Response:
        export = ExportTraceServiceRequest.FromString(await request.body())
        for resource_spans in export.resource_spans:
            resource = {a.key: a.value.string_value for a in resource_spans.resource.attributes}
            for scope_spans in resource_spans.scope_spans:
                for span in scope_spans.spans:
                    self.spans.append(
                        ReceivedSpan(
                            service=resource.get("service.name", ""),
                            name=span.name,
                            trace_id=span.trace_id.hex(),
                            span_id=span.span_id.hex(),
                            parent_id=span.parent_span_id.hex(),
                            attributes={
                                a.key: a.value.string_value or str(a.value.int_value)
                                for a in span.attributes
                            },
                        )
                    )
        body = ExportTraceServiceResponse().SerializeToString()
        return Response(body, media_type="application/x-protobuf")
