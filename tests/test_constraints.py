"""constraints.txt (scripts/lock.sh) pins a version of every dependency that bootstrap installs,
and each pin is one pyproject.toml accepts: else the install fails, or installs an untested set."""

import re
import tomllib
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.version import Version

ROOT = Path(__file__).resolve().parent.parent
# What scripts/bootstrap.sh and docs/scrapyd.md install with the constraints.
INSTALLED_EXTRAS = ("dev", "js", "mcp", "scrapyd", "cluster")


def normalized(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def pins() -> dict[str, Version]:
    found = {}
    for line in (ROOT / "constraints.txt").read_text().splitlines():
        if line.strip() and not line.startswith("#"):
            name, separator, version = line.partition("==")
            assert separator and version, f"constraints.txt: {line!r} is not name==version"
            found[normalized(name)] = Version(version)
    return found


def requirements() -> list[Requirement]:
    with (ROOT / "pyproject.toml").open("rb") as handle:
        project = tomllib.load(handle)["project"]
    texts = list(project["dependencies"])
    for extra in INSTALLED_EXTRAS:
        texts += project["optional-dependencies"][extra]
    return [Requirement(text) for text in texts]


@pytest.mark.parametrize("requirement", requirements(), ids=str)
def test_every_dependency_is_pinned_where_pyproject_allows(requirement: Requirement) -> None:
    pinned = pins()
    name = normalized(requirement.name)
    assert name in pinned, f"constraints.txt pins no {requirement.name}: run scripts/lock.sh"
    assert requirement.specifier.contains(pinned[name], prereleases=True), (
        f"constraints.txt pins {requirement.name} {pinned[name]}, which {requirement} refuses: "
        "run scripts/lock.sh")


def test_torch_is_pinned_without_its_build_label() -> None:
    """bootstrap.sh installs the CPU build (2.13.0+cpu) first; ``torch==2.13.0`` holds it there,
    and would hold a CUDA build too, where ``+cpu`` would be refused on an index that has none."""
    assert pins()["torch"] == Version("2.13.0")
    assert "torch==2.13.0" in (ROOT / "constraints.txt").read_text().splitlines()
    assert "torch==2.13.0" in (ROOT / "scripts/bootstrap.sh").read_text()
