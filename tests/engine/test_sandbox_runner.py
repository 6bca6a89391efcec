"""The worker's sandbox runner and data converter give each payload its proper context.

`CompiledSandboxRunner` answers the SDK's per-payload context lookups without entering
the sandbox, and `SharingDataConverter`'s copies share their converters: a payload codec
that notes the context of every payload it encodes shows what each one was given.
"""

from __future__ import annotations

import dataclasses
import uuid
from collections.abc import Sequence
from pathlib import Path

from temporalio.api.common.v1 import Payload
from temporalio.client import Client
from temporalio.converter import (
    ActivitySerializationContext,
    PayloadCodec,
    SerializationContext,
    WithSerializationContext,
    WorkflowSerializationContext,
)
from temporalio.testing import WorkflowEnvironment
from temporalio.worker import Worker

from activities.payloads import SharingDataConverter, data_converter
from activities.store.sqlite import SqliteStore
from app.sandbox import CompiledSandboxRunner
from tests.engine.context_workflow import ContextProbe, shout


class NotingCodec(PayloadCodec, WithSerializationContext):
    """Encodes nothing; notes (context, payload data) for each payload it is given."""

    def __init__(
        self,
        seen: list[tuple[SerializationContext | None, bytes]],
        context: SerializationContext | None = None,
    ) -> None:
        self.seen = seen
        self.context = context

    def with_context(self, context: SerializationContext) -> NotingCodec:
        return NotingCodec(self.seen, context)

    async def encode(self, payloads: Sequence[Payload]) -> list[Payload]:
        self.seen.extend((self.context, p.data) for p in payloads)
        return list(payloads)

    async def decode(self, payloads: Sequence[Payload]) -> list[Payload]:
        return list(payloads)


async def test_each_payload_is_encoded_with_its_commands_context(
    temporal_env: WorkflowEnvironment, tmp_path: Path
) -> None:
    store = SqliteStore(tmp_path / "t.db")
    await store.connect()
    seen: list[tuple[SerializationContext | None, bytes]] = []
    converter = dataclasses.replace(data_converter(store), payload_codec=NotingCodec(seen))
    assert isinstance(converter, SharingDataConverter)
    config = temporal_env.client.config()
    config["data_converter"] = converter
    client = Client(**config)
    queue = f"context-{uuid.uuid4()}"
    workflow_id = f"probe-{uuid.uuid4()}"
    try:
        async with Worker(
            client,
            task_queue=queue,
            workflows=[ContextProbe],
            activities=[shout],
            workflow_runner=CompiledSandboxRunner(),
        ):
            result = await client.execute_workflow(
                ContextProbe.run, "hi", id=workflow_id, task_queue=queue
            )
    finally:
        await store.close()
    assert result == "HI!"
    by_data = {data: context for context, data in seen}
    # The activity's input, encoded from the workflow's command: the activity's context.
    activity_input = by_data[b'"hi"']
    assert isinstance(activity_input, ActivitySerializationContext)
    assert (activity_input.activity_type, activity_input.workflow_id) == ("shout", workflow_id)
    assert not activity_input.is_local
    # The workflow's result, on its completion command: the workflow's context.
    assert by_data[b'"HI!"'] == WorkflowSerializationContext(
        namespace=client.namespace, workflow_id=workflow_id
    )


def test_copies_of_the_converter_share_its_converters(tmp_path: Path) -> None:
    converter = data_converter(SqliteStore(tmp_path / "t.db"))
    copy = dataclasses.replace(converter, payload_codec=None)
    assert copy.payload_converter is converter.payload_converter
    assert copy.failure_converter is converter.failure_converter
    [payload] = copy.payload_converter.to_payloads([{"a": 1}])
    assert converter.payload_converter.from_payloads([payload]) == [{"a": 1}]
