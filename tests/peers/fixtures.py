"""Session-scoped pytest fixtures for the test peers; import them into a conftest:

from tests.peers.fixtures import peers  # noqa: F401
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from tests.peers.catalog import Peers, running_peers


@pytest.fixture(scope="session")
async def peers(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Peers]:
    """Every test peer running, with `peers.catalog_path` naming them all."""
    directory: Path = tmp_path_factory.mktemp("peers")
    async with running_peers(directory) as running:
        yield running
