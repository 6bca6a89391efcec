"""Large payloads kept out of Temporal history: a claim check in the document store.

Temporal refuses payloads over 2 MB and warns from 256 KB; a run's input, a step's
output or a batch of read-model writes can be larger. Every Temporal client and worker
of Trellis uses `data_converter(store, …)`: a payload above the threshold is written to
the store under the SHA-256 of its bytes and replaced in history by a small claim, and
read back transparently wherever it is decoded (the SDK's external storage).

Each put names the run whose history will carry the claim: the SDK's store context names
the workflow an activity's result, a workflow task's commands or a client's start, signal or
update is for, and a run's workflow id is its run id. The store deletes a payload with the
last run naming it; one put naming no workflow (an activity no workflow started, a bare
encode) keeps it for good. A schedule's workflow (by its type) is no run: a client's create
or update of the schedule names it with no run of it yet (the schedule's own argument, kept
while the schedule is), a firing names its run (its own activity's input and result, swept
once the firing is surely over: app/firing_payloads.py).
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
from collections.abc import Iterable, Sequence

from google.protobuf import json_format
from temporalio.api.common.v1 import Payload
from temporalio.api.sdk.v1.external_storage_pb2 import ExternalStorageReference
from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.converter import (
    DataConverter,
    ExternalStorage,
    FailureConverter,
    PayloadConverter,
    StorageDriver,
    StorageDriverClaim,
    StorageDriverRetrieveContext,
    StorageDriverStoreContext,
    StorageDriverWorkflowInfo,
)

from activities.store.base import PayloadHolder, Store, StoreError
from activities.store.while_unavailable import while_unavailable
from temporal_workflows.schedule_trigger import SCHEDULE_WORKFLOW_TYPE

# Temporal warns about payloads from 256 KB; keep everything above it in the store.
DEFAULT_OFFLOAD_BYTES = 256 * 1024
DRIVER_NAME = "trellis-store"
# How the SDK marks a claim in history (json/protobuf of this message).
_CLAIM_TYPE = ExternalStorageReference.DESCRIPTOR.full_name.encode()
# How long a payload's write waits for a store that cannot take it for now (locked, a full
# disk): it is written as a workflow task completes or an activity's result is sent, and an
# activity whose result could not be sent is run again (its step's call made twice).
WRITE_PATIENCE_SECONDS = 30.0


class StorePayloads(StorageDriver):
    """Payloads in the document store, keyed by the SHA-256 of their serialised bytes."""

    def __init__(self, store: Store) -> None:
        self._store = store

    def name(self) -> str:
        return DRIVER_NAME

    def type(self) -> str:
        return DRIVER_NAME

    async def store(
        self, context: StorageDriverStoreContext, payloads: Sequence[Payload]
    ) -> list[StorageDriverClaim]:
        claims: list[StorageDriverClaim] = []
        run_id, holder = _run_of(context)
        for payload in payloads:
            data = payload.SerializeToString()
            key = hashlib.sha256(data).hexdigest()
            await while_unavailable(
                functools.partial(self._store.put_payload, key, data, run_id, holder),
                "a payload's write",
                patience=WRITE_PATIENCE_SECONDS,
            )
            claims.append(StorageDriverClaim(claim_data={"key": key}))
        return claims

    async def retrieve(
        self, context: StorageDriverRetrieveContext, claims: Sequence[StorageDriverClaim]
    ) -> list[Payload]:
        payloads: list[Payload] = []
        for claim in claims:
            key = claim.claim_data["key"]
            data = await self._store.get_payload(key)
            if data is None:
                raise StoreError(f"payload {key} is missing from the store")
            payload = Payload()
            payload.ParseFromString(data)
            payloads.append(payload)
        return payloads


def claimed_keys(payloads: Iterable[Payload]) -> set[str]:
    """The store keys these payloads (as Temporal holds them) are claims for: a schedule's
    argument kept here, say."""
    keys: set[str] = set()
    for payload in payloads:
        if payload.metadata.get("messageType") != _CLAIM_TYPE:
            continue
        reference = json_format.Parse(
            payload.data, ExternalStorageReference(), ignore_unknown_fields=True
        )
        if reference.driver_name == DRIVER_NAME and "key" in reference.claim_data:
            keys.add(reference.claim_data["key"])
    return keys


def _run_of(context: StorageDriverStoreContext) -> tuple[str | None, PayloadHolder]:
    """The workflow whose history carries what is stored (its id; None: none named) and
    what it is: a run, or a schedule's own argument or one of its firings."""
    target = context.target
    if not isinstance(target, StorageDriverWorkflowInfo):
        return None, PayloadHolder.RUN
    if target.type != SCHEDULE_WORKFLOW_TYPE:
        return target.id, PayloadHolder.RUN
    # The schedule's action, encoded by the client that creates or updates it, names the
    # workflow it starts and no run (there is none yet); a firing's workflow task and
    # activity name the firing's run.
    if target.run_id is None:
        return target.id, PayloadHolder.SCHEDULE
    return target.id, PayloadHolder.FIRING


@functools.cache
def _converters(
    payload_class: type[PayloadConverter], failure_class: type[FailureConverter]
) -> tuple[PayloadConverter, FailureConverter]:
    plain = DataConverter(
        payload_converter_class=payload_class, failure_converter_class=failure_class
    )
    return plain.payload_converter, plain.failure_converter


@dataclasses.dataclass(frozen=True)
class SharingDataConverter(DataConverter):
    """A `DataConverter` whose copies share one payload and one failure converter.

    The worker copies its data converter (`dataclasses.replace`) for each payload of a
    workflow task, to give it a serialization or storage context, and every copy built a
    fresh pydantic payload converter: ~10 µs a copy, ~3 % of the worker's CPU on plain
    steps (`bench.profile --workload delay`). Both converters keep no per-use state (the
    pydantic one caches type adapters, which sharing only helps), and a copy given a
    context still gets its own from `with_context`.
    """

    def __post_init__(self) -> None:
        payload, failure = _converters(self.payload_converter_class, self.failure_converter_class)
        object.__setattr__(self, "payload_converter", payload)
        object.__setattr__(self, "failure_converter", failure)


def data_converter(store: Store, offload_bytes: int = DEFAULT_OFFLOAD_BYTES) -> DataConverter:
    """Trellis's pydantic payloads, with the large ones kept in `store`."""
    storage = ExternalStorage(drivers=[StorePayloads(store)], payload_size_threshold=offload_bytes)
    return SharingDataConverter(
        payload_converter_class=pydantic_data_converter.payload_converter_class,
        failure_converter_class=pydantic_data_converter.failure_converter_class,
        payload_codec=pydantic_data_converter.payload_codec,
        external_storage=storage,
    )
