"""An agent's file parts come back as `{url|raw[, mediaType][, filename]}`: a media type
and a filename the agent gave are kept, for a raw part as for a URL part, and none given
is left out."""

from __future__ import annotations

from activities.executors.catalog import Catalog
from activities.executors.catalog_file import A2AAgentSpec, CatalogFile
from activities.executors.registry import ExecutorRegistry
from tests.executors.conftest import MakeCall
from tests.peers.a2a_agents import AgentSpec, AgentStats, agents_app
from tests.peers.serving import ServedApp, free_port


async def test_file_parts_keep_the_media_type_and_filename_given_and_show_none_not_given(
    make_call: MakeCall,
) -> None:
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    served = ServedApp(agents_app([AgentSpec("filer", kind="files")], base, AgentStats()), port)
    served.start()
    agent = A2AAgentSpec(name="filer", url=f"{base}/agents/filer/")
    registry = ExecutorRegistry(Catalog(CatalogFile(agents=(agent,))))
    try:
        outcome = await registry.execute(make_call("filer", {"task": "files"}))
    finally:
        await registry.close()
        served.stop()
    assert outcome.output == [
        {"raw": "iVBORw==", "mediaType": "image/png", "filename": "chart.png"},
        {"raw": "cGxhaW4=", "mediaType": "text/plain"},
        {
            "url": "https://files.example/r.pdf",
            "mediaType": "application/pdf",
            "filename": "report.pdf",
        },
        {"url": "https://files.example/x", "mediaType": "application/pdf"},
        # No media type given: it said "mediaType": "".
        {"raw": "YmxvYg=="},
        {"url": "https://files.example/notes", "filename": "notes.txt"},
    ]
