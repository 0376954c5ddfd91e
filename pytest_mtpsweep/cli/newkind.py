"""`mtpsweep new-kind NAME`: a third party's kind package, written from the template.

The template is package data, `kindtemplate/` beside this module: each `*.tmpl` file is one
file of the new package, its `{{token}}`s replaced by the name's spellings (`package/` becomes
the import package, `NAME` in a file name the kind's name). It is the only copy: the tests'
probe kind is this template rendered as `probe`, and rendered output is held lint- and
mypy --strict clean by tests/cli/test_newkind.py.
"""

from __future__ import annotations

import argparse
import keyword
import re
from importlib import resources
from importlib.resources.abc import Traversable
from pathlib import Path

from .._version import __version__
from ..base.errors import UserError
from ..interface import registry

TEMPLATE = "kindtemplate"  # the package-data folder beside this module
SUFFIX = ".tmpl"
MAX_NAME = 32  # characters: the name spells a package, a fixture, a flag and a class
MAX_TEMPLATE_BYTES = 64 * 1024  # one template file; ours are a few kilobytes
_NAME = re.compile(rf"[a-z][a-z0-9_]{{0,{MAX_NAME - 1}}}")
# Names the rendered code or the plugin keeps: `kind` would make the class `KindRun`, which the
# template imports; `request` is pytest's fixture; `mtpsweep*` fixtures are the plugin's.
TAKEN = frozenset({"kind", "request"})


class ScaffoldError(UserError):
    """`mtpsweep new-kind` cannot write the package asked for."""


def spellings(name: str) -> dict[str, str]:
    """Each `{{token}}` of the template and what it becomes for kind `name`."""
    words = [w for w in name.split("_") if w]
    return {
        "name": name,
        "Name": "".join(w.capitalize() for w in words),
        "Title": " ".join(words).capitalize(),
        "flag": "-".join(words),
        "package": f"{name}_kind",
        "dist": f"{'-'.join(words)}-kind",
        "version": __version__,
    }


def name_problem(name: str, shipped: frozenset[str]) -> str | None:
    """Why `name` cannot be a new kind's name (a sentence with the fix), or None."""
    if not _NAME.fullmatch(name) or keyword.iskeyword(name) or name.endswith("_"):
        return (
            f"{name!r} is not a kind name: use a lowercase Python name of at most {MAX_NAME} "
            "characters (a letter, then letters, digits or _), such as 'ttft'."
        )
    if name in shipped:
        return (
            f"{name!r} is a shipped kind's name ({', '.join(sorted(shipped))}); a third party "
            "may not take it: choose another name."
        )
    if name in TAKEN or name.startswith("mtpsweep"):
        return f"{name!r} is a name pytest or the plugin keeps for itself; choose another name."
    return None


def target_problem(target: Path) -> str | None:
    """Why the new package may not be written into `target` (a sentence), or None. An empty
    folder is fine; anything else must be a new path `fileio.output_problem` accepts."""
    from ..base.fileio import output_problem

    if target.is_dir() and not target.is_symlink():
        try:
            full = any(target.iterdir())
        except OSError as exc:
            return f"{target} cannot be read ({exc.strerror or exc}); name a new folder with --dir."
        if full:
            return (
                f"{target} already exists and is not empty; name a new folder with --dir, or "
                "empty that one first."
            )
        return None
    why = output_problem(target, looks_right=lambda _: False, what="a new kind package")
    return None if why is None else f"{target} {why}; name a new folder with --dir."


def render(name: str) -> dict[Path, str]:
    """The new package's files (path relative to its folder -> text), from the template."""
    tokens = spellings(name)
    root = resources.files("pytest_mtpsweep").joinpath(TEMPLATE)
    sources = _template_files(root, Path()) if root.is_dir() else []
    if not sources:  # a wheel built without its package data
        raise ScaffoldError(
            f"this installation of pytest-mtpsweep has no template ({TEMPLATE}/ beside "
            f"{__name__}); reinstall it from a wheel or sdist that carries its package data."
        )
    out: dict[Path, str] = {}
    for source in sources:
        with root.joinpath(*source.parts).open("rb") as f:
            data = f.read(MAX_TEMPLATE_BYTES + 1)
        if len(data) > MAX_TEMPLATE_BYTES:
            raise ScaffoldError(f"template {source} is over {MAX_TEMPLATE_BYTES} bytes; reinstall.")
        text = data.decode("utf-8")
        for token, value in tokens.items():
            text = text.replace("{{" + token + "}}", value)
        parts = [tokens["package"] if p == "package" else p for p in source.parts]
        parts[-1] = parts[-1].removesuffix(SUFFIX).replace("NAME", name)
        out[Path(*parts)] = text
    return out


def _template_files(folder: Traversable, at: Path) -> list[Path]:
    """Every `*.tmpl` file under the template folder, relative to it, in name order."""
    found: list[Path] = []
    for entry in sorted(folder.iterdir(), key=lambda e: e.name):
        if entry.is_dir():
            found.extend(_template_files(entry, at / entry.name))
        elif entry.name.endswith(SUFFIX):
            found.append(at / entry.name)
    return found


def shipped_names() -> frozenset[str]:
    """The kinds this distribution ships (their entry points; nothing is imported)."""

    return frozenset(n for n, found in registry.entries().items() if any(e.shipped for e in found))


def write(name: str, target: Path, shipped: frozenset[str] | None = None) -> list[Path]:
    """Write kind `name`'s package into `target` (new, or an empty folder); the files written.
    Every check runs before the first file is written."""
    why = name_problem(name, shipped_names() if shipped is None else shipped)
    why = why or target_problem(target)
    if why is not None:
        raise ScaffoldError(why)
    from ..base.fileio import write_new_text

    files = render(name)
    for rel, text in files.items():
        write_new_text(target / rel, text)
    return [target / rel for rel in files]


def _new_kind(args: argparse.Namespace) -> int:
    name: str = args.name
    target = Path(args.dir) if args.dir else Path(spellings(name)["dist"])
    written = write(name, target)
    print(f"wrote kind {name!r}: {len(written)} files in {target}/")
    print(f"next: pip install -e {target}, then mtpsweep kinds; {target}/README.md says the rest")
    return 0


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "new-kind",
        help="write a new experiment kind's package (a third party's) from the template",
        description="Write a complete kind package into a new folder: pyproject.toml with its "
        "pytest_mtpsweep.kinds entry point, the kind's modules (they import "
        "pytest_mtpsweep.kindapi alone), an example ladder and its test, a README. The kind "
        "times GET /health on attached servers: a start to change. Refuses a folder that is "
        "not empty and a name a shipped kind has.",
    )
    p.add_argument("name", metavar="NAME", help="the kind's name: a lowercase Python name")
    p.add_argument("--dir", metavar="DIR", help="the folder to write (default: ./NAME-kind)")
    p.set_defaults(func=_new_kind)
