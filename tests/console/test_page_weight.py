"""What the console costs a browser: bytes on the wire for a first visit to the inbox."""

from __future__ import annotations

from typing import Any

from tests.console.browser import ARTIFACTS
from tests.console.console import Console

# Bytes of the console's own files on a first visit (no cache, gzip, headers included);
# measured about 56.4 KB in 20 requests (docs/console.md, Page weight). The budget catches
# a vendored framework or a lost gzip; what is added makes room for itself first.
BUDGET_BYTES = 60_000


async def test_a_first_visit_to_the_inbox_stays_small(console: Console) -> None:
    requests: list[Any] = []
    console.page.on("requestfinished", lambda request: requests.append(request))
    await console.goto("/console/approvals")
    await console.page.wait_for_load_state("networkidle")
    own = api = 0
    lines = []
    for request in requests:
        sizes = await request.sizes()
        size = sizes["responseBodySize"] + sizes["responseHeadersSize"]
        path = request.url.removeprefix(console.base_url)
        if path.startswith("/console"):
            own += size
        else:
            api += size
        lines.append(f"{size:>7}  {path}")
    report = "\n".join(
        [
            "first visit to /console/approvals (bytes on the wire, headers included)",
            *lines,
            f"{own:>7}  console files ({sum(1 for line in lines if '/console' in line)} requests)",
            f"{api:>7}  API answers",
        ]
    )
    (ARTIFACTS / "page-weight.txt").write_text(report + "\n")
    print(report)
    assert not [r for r in requests if not r.url.startswith(console.base_url)], "external request"
    assert own < BUDGET_BYTES, report
