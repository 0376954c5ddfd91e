"""What a server binary says about itself: `--version`, probed once per binary and parsed."""

from __future__ import annotations

import functools
import re
import subprocess
from dataclasses import dataclass
from pathlib import Path

VERSION_TIMEOUT_S = 30.0


@dataclass(frozen=True)
class ServerVersion:
    """What ``llama-server --version`` says about itself."""

    line: str
    version: str
    build: str | None
    commit: str | None

    @property
    def identity(self) -> str:
        """Release-tag style identity, e.g. ``b11434-515e85511``."""
        if self.build and self.commit:
            return f"b{self.build}-{self.commit}"
        return self.commit or self.build or self.version


def parse_server_version(text: str) -> ServerVersion | None:
    """Parse ``--version`` output (either the build/commit form or the older ``N (hash)``)."""
    match = re.search(r"^\s*version:\s*(\S+)\s*\(([^)]*)\)", text, re.MULTILINE)
    if match is None:
        return None
    version, inner = match.group(1), match.group(2).strip()
    line = match.group(0).strip()
    fields = dict(re.findall(r"\b(build|commit)\s+([^\s,]+)", inner))
    if fields:
        return ServerVersion(line, version, fields.get("build"), fields.get("commit"))
    # The older form prints the build number where the version goes, the commit in brackets.
    build = version if version.isdigit() else None
    return ServerVersion(line, version, build, inner or None)


def build_id(output: str) -> str | None:
    """`b11434-515e85511` from `version: 0.6.0-dev (build 11434, commit 515e85511)`."""
    parsed = parse_server_version(output)
    if parsed is None or not (parsed.build and parsed.commit):
        return None
    return parsed.identity


def build_matches(version: ServerVersion, expected: str) -> bool:
    """Whether ``expected`` names this build: build number, commit, or ``b<build>-<commit>``.

    Whole tokens only (``1`` does not match build ``11434``); commits match when one hash is
    a prefix of the other and both have at least 7 hex digits (short versus full hash).
    """
    want = expected.strip().lower()
    tagged = re.fullmatch(r"b?(\d+)-([0-9a-f]+)", want)
    if tagged:
        return tagged.group(1) == version.build and _commit_matches(version, tagged.group(2))
    by_build = re.fullmatch(r"b?(\d+)", want) is not None and want.lstrip("b") == version.build
    return by_build or _commit_matches(version, want)


def _commit_matches(version: ServerVersion, want: str) -> bool:
    have = (version.commit or "").lower()
    if min(len(have), len(want)) < 7 or not re.fullmatch(r"[0-9a-f]+", want):
        return False
    return have.startswith(want) or want.startswith(have)


def version_output(server_bin: Path) -> str:
    """What `server_bin --version` prints (stderr, then stdout), or why it printed nothing.

    Cached per (path, mtime): preflight, provisioning and the run ask the same binary once.
    """
    try:
        mtime = server_bin.stat().st_mtime_ns
    except OSError as exc:
        return f"could not run it: {exc.strerror}"
    return _probe(str(server_bin), mtime)


@functools.cache
def _probe(path: str, mtime_ns: int) -> str:
    try:
        done = subprocess.run(
            [path, "--version"],
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            errors="replace",
            timeout=VERSION_TIMEOUT_S,
            check=False,
        )
    except subprocess.TimeoutExpired:
        return f"no answer within {VERSION_TIMEOUT_S:g} s"
    except OSError as exc:
        return f"could not run it: {exc.strerror}"
    # llama-server prints its version to stderr; read stdout too in case a build changes that.
    return f"{done.stderr}\n{done.stdout}".strip()


def version_line(server_bin: Path) -> str:
    """The `version: …` line, else the first line of what the binary said."""
    output = version_output(server_bin)
    parsed = parse_server_version(output)
    if parsed is not None:
        return parsed.line
    return output.splitlines()[0] if output else ""
