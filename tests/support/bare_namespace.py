"""A fresh namespace on the session's dev server, without Trellis's search attributes (as
a cluster's namespace is before `trellis setup`)."""

from __future__ import annotations

import asyncio
import time
import uuid

from google.protobuf.duration_pb2 import Duration
from temporalio.api.operatorservice.v1 import ListSearchAttributesRequest
from temporalio.api.workflowservice.v1 import RegisterNamespaceRequest
from temporalio.client import Client
from temporalio.service import RPCError


async def bare_namespace(client: Client, within: float = 30.0) -> str:
    """Register a namespace of a fresh name; return it once its search attributes list."""
    name = f"bare-{uuid.uuid4().hex[:8]}"
    await client.workflow_service.register_namespace(
        RegisterNamespaceRequest(
            namespace=name, workflow_execution_retention_period=Duration(seconds=86_400)
        )
    )
    deadline = time.monotonic() + within
    while True:
        try:
            await client.operator_service.list_search_attributes(
                ListSearchAttributesRequest(namespace=name)
            )
            return name
        except RPCError:
            # The server's namespace cache learns of it within a few seconds.
            if time.monotonic() > deadline:
                raise
            await asyncio.sleep(0.2)
