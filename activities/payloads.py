"""Large payloads kept out of Temporal history: a claim check in the document store.

Temporal refuses payloads over 2 MB and warns from 256 KB; a run's input, a step's
output or a batch of read-model writes can be larger. Every Temporal client and worker
of Trellis uses `data_converter(store, …)`: a payload above the threshold is written to
the store under the SHA-256 of its bytes and replaced in history by a small claim, and
read back transparently wherever it is decoded (the SDK's external storage).
"""

from __future__ import annotations

import dataclasses
import hashlib
from collections.abc import Sequence

from temporalio.api.common.v1 import Payload
from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.converter import (
    DataConverter,
    ExternalStorage,
    StorageDriver,
    StorageDriverClaim,
    StorageDriverRetrieveContext,
    StorageDriverStoreContext,
)

from activities.store.base import Store, StoreError

# Temporal warns about payloads from 256 KB; keep everything above it in the store.
DEFAULT_OFFLOAD_BYTES = 256 * 1024
DRIVER_NAME = "trellis-store"


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
        for payload in payloads:
            data = payload.SerializeToString()
            key = hashlib.sha256(data).hexdigest()
            await self._store.put_payload(key, data)
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


def data_converter(store: Store, offload_bytes: int = DEFAULT_OFFLOAD_BYTES) -> DataConverter:
    """Trellis's pydantic payloads, with the large ones kept in `store`."""
    storage = ExternalStorage(drivers=[StorePayloads(store)], payload_size_threshold=offload_bytes)
    return dataclasses.replace(pydantic_data_converter, external_storage=storage)
