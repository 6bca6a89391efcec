"""The long-running processes freeze the heap they started with (app/heap.py)."""

from __future__ import annotations

import gc
from collections.abc import Iterator
from pathlib import Path

import pytest

from app.heap import freeze_startup_heap
from app.main import create_app
from app.settings import Settings


@pytest.fixture
def unfrozen() -> Iterator[None]:
    gc.unfreeze()
    try:
        yield
    finally:
        gc.unfreeze()  # give this test process its collector back


class Startup:
    """Stands for an object built at start-up."""


def test_frozen_objects_are_left_out_of_collections_new_ones_are_not(unfrozen: None) -> None:
    before = Startup()
    freeze_startup_heap()
    after = Startup()
    assert gc.get_freeze_count() > 0
    tracked = {id(o) for o in gc.get_objects() if isinstance(o, Startup)}
    assert id(before) not in tracked and id(after) in tracked


async def test_the_api_freezes_its_heap_once_started_only_as_its_own_process(
    unfrozen: None, tmp_path: Path
) -> None:
    settings = Settings(data_dir=tmp_path, temporal_address="127.0.0.1:1")
    for own_process, frozen in ((False, False), (True, True)):
        app = create_app(settings, own_process=own_process)
        async with app.router.lifespan_context(app):
            assert (gc.get_freeze_count() > 0) is frozen
