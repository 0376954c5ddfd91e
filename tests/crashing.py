"""STUB wrappers around the STUB llama-server that die while loading, as a broken build does.

`crashing(tmp, "sigill")` answers `--version` like llama-server, then dies by SIGILL at every
start (a binary built for CPU features the machine lacks); "sigkill" dies as the OOM killer
ends it. `crashing(tmp, "sigill", only=" b ")` dies only when its argv holds " b " (one
treatment's sessions, not preflight's smoke test), and not at all once `fixed` exists.
"""

from __future__ import annotations

from pathlib import Path

from tests.sandbox import STUB_SERVER


def crashing(tmp: Path, how: str, *, only: str = "", fixed: Path | None = None) -> Path:
    wrapper = tmp / f"crash-{how}.sh"
    fault = f"--fault {how}-at-start"
    lines = [
        "#!/usr/bin/env bash",
        f'if [ "$1" = --version ]; then exec {STUB_SERVER} --version; fi',
    ]
    if fixed is not None:
        lines.append(f'if [ -e {fixed} ]; then exec {STUB_SERVER} "$@"; fi')
    if only:
        lines.append(f'case " $* " in *"{only}"*) exec {STUB_SERVER} "$@" {fault};; esac')
        lines.append(f'exec {STUB_SERVER} "$@"')
    else:
        lines.append(f'exec {STUB_SERVER} "$@" {fault}')
    wrapper.write_text("\n".join(lines) + "\n")
    wrapper.chmod(0o755)
    return wrapper
