"""docs/write-a-kind.md, followed as a new user would: every block marked `<!-- guide-test:
run -->` runs, in order, in one shell, in an empty folder, with the commands `pip`,
`mtpsweep` and `pytest` of a throwaway venv, against a STAND-IN server at the page's address.
The kind is installed for real (`pip install -e .`, found by its entry point), then what the
page says the run prints and writes is checked against the run.

The venv sees this environment's packages (a `.pth` that adds its site-packages) and this
tree first (PYTHONPATH); pip runs offline and without build isolation (PIP_NO_BUILD_ISOLATION=0
means that), so the build uses this environment's setuptools and wheel (a dev dependency)."""

from __future__ import annotations

import json
import os
import re
import site
import stat
import subprocess
import sys
from importlib.util import find_spec
from pathlib import Path

from tests.kinds import probe

REPO = Path(__file__).resolve().parent.parent
PAGE = REPO / "docs" / "write-a-kind.md"
MARK = "<!-- guide-test: run -->"
ADDRESS = "http://127.0.0.1:8080"  # where the page says the server answers; the stand-in's here


def marked_blocks(text: str) -> list[str]:
    """The fenced blocks right under the marker, in page order."""
    return re.findall(rf"^{re.escape(MARK)}\n```\w*\n(.*?)^```", text, flags=re.S | re.M)


def test_the_block_finder_takes_the_marked_blocks_only() -> None:
    text = f"{MARK}\n```sh\na\nb\n```\n\n```sh\nnot me\n```\n{MARK}\n```\nc\n```\n"
    assert marked_blocks(text) == ["a\nb\n", "c\n"]


def throwaway_venv(folder: Path) -> Path:
    """A venv without pip of its own whose Python sees this environment's packages, with the
    page's three commands as that Python's modules; its bin/ folder."""
    subprocess.run(
        [sys.base_prefix + "/bin/python3", "-m", "venv", "--without-pip", str(folder)],
        check=True,
    )
    py = folder / "bin" / "python"
    purelib = subprocess.run(
        [str(py), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    ours = [*site.getsitepackages(), site.getusersitepackages()]
    adds = "; ".join(f"site.addsitedir({p!r})" for p in ours if Path(p).is_dir())
    (Path(purelib) / "parent_env.pth").write_text(f"import site; {adds}\n")
    for command, module in (
        ("pip", "pip"),
        ("pytest", "pytest"),
        ("mtpsweep", "pytest_mtpsweep.cli.main"),
    ):
        wrapper = folder / "bin" / command
        wrapper.write_text(f'#!/bin/sh\nexec "{py}" -m {module} "$@"\n')
        wrapper.chmod(wrapper.stat().st_mode | stat.S_IXUSR)
    return folder / "bin"


def test_the_guide_writes_installs_and_runs_a_kind_as_it_says(tmp_path: Path) -> None:
    assert find_spec("wheel") is not None, (
        "pip cannot build the kind offline without the wheel package, a dev dependency: "
        "pip install -e '.[dev]'"
    )
    page = PAGE.read_text(encoding="utf-8")
    blocks = marked_blocks(page)
    assert len(blocks) == 4, blocks  # write, install, run, analyse
    bin_dir = throwaway_venv(tmp_path / "venv")
    work = tmp_path / "work"
    work.mkdir()
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")},  # a new shell's
        "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}",
        "PYTHONPATH": str(REPO),
        "PIP_NO_BUILD_ISOLATION": "0",
        "PIP_NO_INDEX": "1",
        "PIP_NO_DEPS": "1",
        "PIP_DISABLE_PIP_VERSION_CHECK": "1",
    }
    with probe.stand_in() as url:
        script = "set -e\n" + "".join(blocks).replace(ADDRESS, url)
        done = subprocess.run(
            ["bash", "-c", script],
            cwd=work,
            env=env,
            capture_output=True,
            text=True,
            timeout=600,
            check=False,
        )
    out = done.stdout
    assert done.returncode == 0, out[-3000:] + done.stderr[-3000:]
    said = [
        "ttft: ok (distribution ttft-kind 0.1.0; fixture ttft; options --ttft-requests)",
        "6 passed",
        "server: 6 GETs, median",
    ]
    for claim in said:
        assert claim in page and claim in out, claim
    the_run_wrote_what_the_page_says(page, work / "ttft-kind")


def the_run_wrote_what_the_page_says(page: str, kind_dir: Path) -> None:
    (run,) = (kind_dir / "runs" / "ttft").iterdir()
    records = run / "records" / "01_server_c1.jsonl"
    assert "`records/01_server_c1.jsonl`" in page
    lines = [json.loads(x) for x in records.read_text().splitlines()]
    assert len(lines) == 3  # `requests = 3` in the ladder the page shows
    for field in ("treatment", "valid", "http_status", "latency_s"):
        assert f"`{field}`" in page
        assert all(field in r for r in lines), field
    assert all(r["valid"] and r["http_status"] == 200 and r["latency_s"] > 0 for r in lines)
    header = "treatment,requests,median_s"
    assert f"`{header}`" in page and "`analysis/ttft.csv`" in page
    csv = (run / "analysis" / "ttft.csv").read_text().splitlines()
    assert csv[0] == header and csv[1].startswith("server,6,")
    opening = "# Ttft report: "
    assert f"`{opening}<run-id>`" in page
    report = (run / "analysis" / "report.md").read_text(encoding="utf-8")
    assert report.startswith(opening + run.name)
    assert "How long does GET /health take on the server?" in report and "| server | 6 |" in report
    assert (run / "analysis" / "report.html").is_file()
