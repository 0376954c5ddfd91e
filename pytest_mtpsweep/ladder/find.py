"""Where `--ladder NAME` is looked for: one rule for the plugin and the CLI."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from ..base.errors import LadderError, UserError
from .load import read_toml  # the TOML reader, bounded; not at import: find is light


def search_dirs(test_paths: Iterable[Path], rootdir: Path, cwd: Path) -> list[Path]:
    """`ladders/` beside each test path given, then the project's `experiments/ladders/`."""
    found = [d / "ladders" for d in test_paths if d.is_dir()]
    for base in (rootdir, cwd):
        found += [base / "experiments" / "ladders", base / "ladders"]
    return list(dict.fromkeys(p.resolve() for p in found))


def find_ladder(name_or_path: str, dirs: list[Path]) -> Path:
    """Resolve `--ladder` as a file path or a name under one of the `ladders/` directories."""
    candidate = Path(name_or_path)
    if candidate.suffix == ".toml" or candidate.exists():
        if candidate.is_file():
            return candidate.resolve()
        if candidate.is_dir():
            raise LadderError(f"--ladder {name_or_path}: is a directory; name a .toml file.")
        if candidate.is_symlink():
            raise LadderError(
                f"--ladder {name_or_path}: a symlink that leads nowhere (or to itself); "
                "point it at a ladder file."
            )
        raise LadderError(f"--ladder {name_or_path}: no such file; check the path.")
    tried: list[Path] = []
    for d in dirs:
        p = d / f"{name_or_path}.toml"
        tried.append(p)
        if p.is_file():
            return p.resolve()
    available = sorted({p.stem for d in dirs if d.is_dir() for p in d.glob("*.toml")})
    raise LadderError(
        f"--ladder {name_or_path}: no ladder of that name in "
        f"{', '.join(str(t.parent) for t in tried) or 'any ladders/ directory'}; "
        f"available: {', '.join(available) or 'none'}."
    )


def named_kind(path: Path) -> str | None:
    """The kind a ladder file names in its `kind` field, read cheaply: None when it names none
    (the default kind) or cannot be read (the loader says why later)."""

    try:
        name = read_toml(path).get("kind")
    except (UserError, OSError):
        return None
    return name if isinstance(name, str) else None
