"""The preflight item that proves the server binary runs on this machine before any session.

A binary built for another CPU (or with llama.cpp's AMX kernels on an AMX machine) dies with
SIGILL at its first matrix product, in every session alike. One start and a few decoded tokens
here say so once, in one sentence, instead of a run of identical crashes.
"""

from __future__ import annotations

from pathlib import Path

from ..rig.provision import smoke_fix
from ..rig.smoke import smoke
from .items import FAIL, PASS, SKIP, PreflightItem, make_item

ITEM = "server_runs"
EXPECTED = "starts and decodes a few tokens on this CPU"


def check_server_runs(
    server_bin: Path | None, source: str | None, model: Path | None, host: str
) -> PreflightItem:
    """Start `server_bin` on `model` once and decode a few tokens (a pass is remembered)."""
    if server_bin is None:
        return make_item(ITEM, EXPECTED, "skipped: no server binary of ours is run", SKIP)
    if model is None or not model.is_file():
        return make_item(ITEM, EXPECTED, "skipped: no model file to start it on", SKIP)
    if not server_bin.is_file():
        return make_item(ITEM, EXPECTED, f"skipped: {server_bin} is missing", SKIP)
    fix = smoke_fix(source or "")
    loopback = host if host in ("127.0.0.1", "::1", "localhost") else "127.0.0.1"
    result = smoke(server_bin, model, fix=fix, host=loopback)
    if result.ok:
        # A pass decoded now and one remembered from an earlier smoke of the same bytes are the
        # same rig: `--against` compares that it runs, not how this preflight learnt it.
        return make_item(ITEM, EXPECTED, result.observed, PASS, stable="runs on this CPU")
    # The sentence already ends in its fix; the fixes list repeats just that part.
    return make_item(ITEM, EXPECTED, result.observed, FAIL, fix=fix[0].upper() + fix[1:] + ".")
