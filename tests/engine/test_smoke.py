from tests.support.platform import Platform


async def test_a_single_echo_step_completes(platform: Platform) -> None:
    run = await platform.run(
        {
            "nodes": [
                {
                    "name": "A",
                    "nodeType": "step",
                    "executorKey": "builtin:echo",
                    "config": {"greeting": "Hi {{customerName}}"},
                }
            ]
        },
        {"customerName": "Jo"},
    )
    assert run["status"] == "completed", run
    assert run["finalOutput"]["config"] == {"greeting": "Hi Jo"}
    assert [n["status"] for n in run["nodeRuns"]] == ["completed"]
