"""A run's node runs a page at a time, for readers that go through all of them: a wide
run's node runs can be gigabytes (20,000 of 110 KB each), so none reads them at once."""

from __future__ import annotations

from collections.abc import AsyncIterator

from activities.store.base import Store
from activities.store.records import NodeRunRecord

# Node runs read at a time.
NODE_RUNS_PER_PAGE = 100


async def node_run_pages(store: Store, run_id: str) -> AsyncIterator[list[NodeRunRecord]]:
    """The run's node runs in `list_node_runs` order, NODE_RUNS_PER_PAGE at a time."""
    read = 0
    while True:
        page, total = await store.node_run_page(run_id, read, NODE_RUNS_PER_PAGE)
        if page:
            yield page
        read += len(page)
        if not page or read >= total:
            return
