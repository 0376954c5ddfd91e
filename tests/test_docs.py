"""README.md and docs/: the front door stays short, every page is in the site, every link lands,
and every snippet still works: each TOML block loads as a ladder, the README's minimal
experiment lints and collects as it says, and each command line names options and subcommands
that the installed plugin and `mtpsweep` accept.

docs/ci.md's workflow is run by tests/test_docs_ci.py, the attach ladders by
tests/ladder/test_attach.py, the exit-code table by tests/test_exit_codes.py.
"""

from __future__ import annotations

import itertools
import re
import shlex
import shutil
import subprocess
import sys
import unicodedata
from pathlib import Path

import pytest

from pytest_mtpsweep.protocol.loader import load_ladder
from tests.test_docs_ci import shell

REPO = Path(__file__).resolve().parent.parent
README = REPO / "README.md"
DOCS = REPO / "docs"
PAGES = sorted(DOCS.glob("*.md"))
DOCUMENTS = [README, *PAGES]
# ARCHITECTURE.md's pages, one per layer: in the site's nav, their links checked as the rest
ARCH_PAGES = sorted((DOCS / "architecture").glob("*.md"))
ARCHITECTURE = [REPO / "ARCHITECTURE.md", *ARCH_PAGES]
README_MAX_LINES = 250


def fenced(path: Path, lang: str) -> list[str]:
    return re.findall(rf"^```{lang}\n(.*?)^```", path.read_text(), flags=re.S | re.M)


def code_lines(path: Path) -> list[str]:
    """Lines of a page's code (fenced, or indented four spaces after a blank line), with
    backslash continuations joined."""
    out: list[str] = []
    in_fence = in_indent = False
    previous_blank = True
    for line in path.read_text().splitlines():
        if line.startswith("```"):
            in_fence = not in_fence
        elif in_fence:
            out.append(line)
        elif line.startswith("    ") and (in_indent or previous_blank):
            in_indent = True
            out.append(line[4:])
        elif line.strip():
            in_indent = False
        previous_blank = not line.strip()
    return re.sub(r"\\\n\s*", " ", "\n".join(out)).splitlines()


def commands(program: str) -> list[tuple[Path, list[str]]]:
    """Every `program ...` line in the README and the docs, as argv (comments dropped)."""
    found = []
    for path in DOCUMENTS:
        for line in code_lines(path):
            text = line.strip().removeprefix(".venv/bin/")
            if text.startswith(program + " "):
                found.append((path, shlex.split(text, comments=True)))
    return found


def long_options(argv: list[str]) -> set[str]:
    return {a.split("=", 1)[0] for a in argv if a.startswith("--")}


def test_the_readme_is_a_front_door() -> None:
    lines = README.read_text().count("\n")
    assert lines <= README_MAX_LINES, f"README.md is {lines} lines; move reference into docs/"


def test_every_page_is_in_the_site_nav() -> None:
    nav = re.findall(r"^\s+- [^:]+: (\S+\.md)\s*$", (REPO / "mkdocs.yml").read_text(), re.M)
    assert sorted(nav) == sorted(p.relative_to(DOCS).as_posix() for p in [*PAGES, *ARCH_PAGES])
    assert len(nav) == len(set(nav))


def slug(heading: str) -> str:
    """The anchor Python-Markdown's toc (what mkdocs uses) gives a heading."""
    text = unicodedata.normalize("NFKD", re.sub(r"[`*]", "", heading))
    text = re.sub(r"[^\w\s-]", "", text.encode("ascii", "ignore").decode()).strip().lower()
    return re.sub(r"[-\s]+", "-", text)


def anchors(path: Path) -> set[str]:
    return {slug(h) for h in re.findall(r"^#+ (.+)$", path.read_text(), flags=re.M)}


@pytest.mark.parametrize("path", [*DOCUMENTS, *ARCHITECTURE], ids=lambda p: p.name)
def test_every_relative_link_lands(path: Path) -> None:
    # mkdocs --strict checks the pages; this checks the README too, and runs in the fast tier
    text = re.sub(r"^```.*?^```", "", path.read_text(), flags=re.S | re.M)
    for target in re.findall(r"\]\(([^)\s]+)\)", text):
        if re.match(r"[a-z]+:", target):
            continue
        file, _, anchor = target.partition("#")
        dest = (path.parent / file).resolve() if file else path
        assert dest.exists(), f"{path.name}: link {target} leads nowhere"
        if anchor:
            assert anchor in anchors(dest), f"{path.name}: {target} names no heading"


def test_the_readme_points_into_every_page() -> None:
    linked = set(re.findall(r"\]\(docs/([\w-]+\.md)", README.read_text()))
    assert linked == {p.name for p in PAGES}


def toml_blocks() -> list[tuple[str, str]]:
    return [(f"{p.name}[{i}]", text) for p in DOCUMENTS for i, text in enumerate(fenced(p, "toml"))]


@pytest.mark.parametrize(("where", "text"), toml_blocks(), ids=[w for w, _ in toml_blocks()])
def test_every_toml_block_loads_as_a_ladder(tmp_path: Path, where: str, text: str) -> None:
    # A fenced toml block is a whole ladder; a fragment is shown as plain indented text.
    path = tmp_path / "ladders" / "snippet.toml"
    path.parent.mkdir()
    path.write_text(text)
    ladder = load_ladder(path)
    assert ladder.treatments, where


def test_the_ladder_reference_shows_the_readme_ladder() -> None:
    (readme_ladder,) = fenced(README, "toml")
    assert readme_ladder in fenced(DOCS / "ladders.md", "toml")


def without_docstring(path: Path) -> str:
    return re.sub(r'^""".*?"""\n\n', "", path.read_text(), count=1, flags=re.S)


def test_the_test_files_shown_are_the_shipped_ones() -> None:
    (authoring,) = fenced(DOCS / "authoring.md", "python")
    assert authoring == without_docstring(REPO / "experiments" / "test_authoring.py")
    (decode,) = fenced(README, "python")
    assert decode == without_docstring(REPO / "experiments" / "test_decode.py")


@pytest.fixture
def minimal(tmp_path: Path) -> Path:
    """The README's minimal experiment as its text lays it out: a ladder, a test file and the
    shipped prompts; no conftest.py."""
    (ladder,) = fenced(README, "toml")
    (test_file,) = fenced(README, "python")
    text = README.read_text()
    ladder_path = re.search(r"`(experiments/ladders/[\w-]+\.toml)`:\n\n```toml", text)
    test_path = re.search(r"`(experiments/test_\w+\.py)`:\n\n```python", text)
    assert ladder_path and test_path, "the README names where each file goes"
    for rel, body in ((ladder_path.group(1), ladder), (test_path.group(1), test_file)):
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(body)
    shutil.copytree(REPO / "experiments" / "prompts", tmp_path / "experiments" / "prompts")
    return tmp_path


def test_the_minimal_experiment_lints_and_collects_as_the_readme_says(minimal: Path) -> None:
    measurements = re.search(r"= (\d+) measurements", README.read_text())
    assert measurements, "the README says how many measurements the ladder makes"
    said = int(measurements.group(1))
    ran = 0
    for _, argv in commands("mtpsweep") + commands("pytest"):
        if "--ladder=ngram" not in argv and "experiments/ladders/ngram.toml" not in argv:
            continue
        if argv[0] == "pytest" and "--collect-only" not in argv:
            argv = [*argv, "--collect-only", "-q"]  # a real run needs the model server
        done = shell(shlex.join(argv), minimal)
        assert done.returncode == 0, done.stdout + done.stderr
        ran += 1
        if argv[0] == "mtpsweep":
            assert ": ok (" in done.stdout, done.stdout
            continue
        collected = f"{said // 2}/{said} tests collected" if "prose" in argv else f"{said} tests"
        assert collected in done.stdout, done.stdout[-2000:]
        if "-k" not in argv:  # the sessions in the order the README's comment gives (ABBA)
            ids = re.findall(r"\[(c\d-[\w.-]+)-(?:prose|structured)_\d+\]", done.stdout)
            shown = next(line for line in code_lines(README) if shlex.split(line)[:3] == argv[:3])
            assert list(dict.fromkeys(ids)) == shown.split("# sessions ", 1)[1].split()
    assert ran == 4  # lint, --collect-only, -k prose, the run itself


def test_every_pytest_option_in_the_docs_is_one_pytest_accepts() -> None:
    helps = subprocess.run(
        [sys.executable, "-m", "pytest", "--help"], capture_output=True, text=True, check=True
    ).stdout
    accepted = set(re.findall(r"(--[\w-]+)", helps))
    found = commands("pytest")
    assert len(found) >= 20
    for path, argv in found:
        unknown = long_options(argv) - accepted
        assert not unknown, f"{path.name}: {shlex.join(argv)} uses {sorted(unknown)}"


def test_every_mtpsweep_command_in_the_docs_is_one_mtpsweep_accepts() -> None:
    cli = [str(Path(sys.executable).parent / "mtpsweep")]  # the installed command
    found = commands("mtpsweep")
    assert len(found) >= 10
    helps: dict[tuple[str, ...], str] = {}
    for path, argv in found:
        # the subcommand's words (`tasks import humaneval`), not its arguments (paths, RUN_A)
        words = tuple(itertools.takewhile(lambda a: re.fullmatch("[a-z]+", a), argv[1:]))
        if words not in helps:
            done = subprocess.run(
                [*cli, *words, "--help"], capture_output=True, text=True, check=False
            )
            assert done.returncode == 0, f"{path.name}: {shlex.join(argv)}: {done.stderr}"
            helps[words] = done.stdout
        unknown = long_options(argv) - set(re.findall(r"(--[\w-]+)", helps[words]))
        assert not unknown, f"{path.name}: {shlex.join(argv)} uses {sorted(unknown)}"


def test_every_bench_script_named_exists() -> None:
    named = {m for p in DOCUMENTS for m in re.findall(r"bench/[\w]+\.py", p.read_text())}
    assert named and all((REPO / n).is_file() for n in named), named


def test_the_readme_commands_are_scripts_dev_commands() -> None:
    dev = (REPO / "scripts" / "dev").read_text()
    for line in code_lines(README):
        if line.startswith("scripts/dev "):
            assert f"  {line.split()[1]})" in dev, line


def mkdocs_build(config: Path, site: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "-f", str(config), "-d", str(site)],
        capture_output=True,
        text=True,
        check=False,
    )


def test_the_site_builds_strict_and_a_broken_link_fails_it(tmp_path: Path) -> None:
    pytest.importorskip(
        "mkdocs", reason="mkdocs comes with the dev extra (scripts/dev installs it)"
    )
    done = mkdocs_build(REPO / "mkdocs.yml", tmp_path / "site")
    assert done.returncode == 0, done.stderr
    copy = tmp_path / "copy"
    shutil.copytree(DOCS, copy / "docs")
    shutil.copy(REPO / "mkdocs.yml", copy)
    with (copy / "docs" / "index.md").open("a") as fh:
        fh.write("\n[gone](options.md#no-such-heading)\n")
    broken = mkdocs_build(copy / "mkdocs.yml", tmp_path / "site2")
    assert broken.returncode != 0 and "no-such-heading" in broken.stderr
