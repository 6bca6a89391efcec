"""A Temporal client of the real test server that refuses every start (no such namespace)."""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from temporalio.client import Client
from temporalio.contrib.pydantic import pydantic_data_converter


@pytest.fixture
async def refusing_client(temporal_env: Any) -> Client:
    """Connected to the session's dev server, in a namespace that does not exist."""
    return await Client.connect(
        temporal_env.client.service_client.config.target_host,
        namespace=f"missing-{uuid.uuid4().hex[:8]}",
        data_converter=pydantic_data_converter,
    )
