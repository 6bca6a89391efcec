"""Connecting to Temporal: every client (API, worker, CLI) uses the pydantic data converter."""

from __future__ import annotations

from temporalio.client import Client
from temporalio.contrib.pydantic import pydantic_data_converter

from app.settings import Settings


async def connect_temporal(settings: Settings) -> Client:
    """A client for the configured cluster (or the embedded dev server)."""
    return await Client.connect(
        settings.resolved_temporal_address,
        namespace=settings.temporal_namespace,
        tls=settings.temporal_tls,
        api_key=settings.temporal_api_key_value,
        data_converter=pydantic_data_converter,
    )


def with_pydantic(client: Client) -> Client:
    """The same connection, speaking our pydantic payloads."""
    config = client.config()
    config["data_converter"] = pydantic_data_converter
    return Client(**config)
