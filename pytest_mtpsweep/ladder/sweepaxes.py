"""`[sweep]`: arms generated along one server setting (or two, as a grid), bounded and checked.

A sweep names a flag and its values, the arguments every arm shares, and which end the
step-down starts from (`from = "high"` or `"low"`, pre-registered). Each value becomes a
treatment keyed `<name>_<value>` (`size_n_4`, `p_min_0.10`); the ladder's declared
`[[treatments]]` (the baseline) stay as they are and run beside the arms. With a second flag
(`grid_flag`, `grid_values`) every pair of values is an arm (`n_max_6_p_min_0.10`), the first
flag varying slowest. A sweep's cycles run in mirrored Williams order (`ladder/plan.py`).
"""

from __future__ import annotations

import math
import re
from itertools import pairwise
from pathlib import Path
from typing import Any

from ..base.errors import LadderError
from .fields import HARNESS_FLAGS, Spec, check_key, check_table, str_list
from .values import Sweep, SweepAxis, Treatment

SWEEP: Spec = {
    "flag": (str, True),
    "values": (list, True),
    "name": (str, False),
    "args": (list, False),
    "from": (str, True),
    "grid_flag": (str, False),
    "grid_values": (list, False),
    "grid_name": (str, False),
    "memory_step_mib": ((int, float), False),
}
# Each arm is a model load per cycle: past a dozen a night's run is a week's, and the best set's
# pairs (k²/2) stop being a handful. The analysis holds 32 (a kind's sweep analysis).
MAX_SWEEP_ARMS = 12
MIN_VALUES = 2  # one value is a treatment, not a sweep
ENDS = ("high", "low")
MAX_VALUE_CHARS = 32  # a value is part of its arm's key, which names files and test ids
# What a value may be as text: a number or a plain word (it goes into the arm's key as it is).
VALUE_TEXT = re.compile(r"-?[A-Za-z0-9][A-Za-z0-9._+]*(-[A-Za-z0-9._+]+)*")


def value_text(value: Any) -> str | None:
    """A value as the server's argv and the arm's key carry it (None: not a number or word)."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if not math.isfinite(value):
            return None
        return f"{value:.2f}" if round(value, 2) == value else repr(value)
    if isinstance(value, str) and value and not value.startswith("-"):
        return value
    return None


def default_name(flag: str) -> str:
    """An arm's key prefix from its flag: its last two words (`--spec-draft-p-min` -> p_min)."""
    words = [w for w in flag.lstrip("-").split("-") if w]
    return "_".join(words[-2:])


def _axis(table: dict[str, Any], prefix: str, path: Path, taken: set[str]) -> SweepAxis:
    field = f"sweep.{prefix}flag"
    flag = table[f"{prefix}flag"]
    if not flag.startswith("-") or "=" in flag or " " in flag:
        raise LadderError(
            f"{path}: field {field} is {flag!r}; name one server flag, e.g. "
            '"--spec-draft-p-min" (its values go in the values list).'
        )
    if flag in HARNESS_FLAGS:
        raise LadderError(
            f"{path}: field {field} is {flag!r}, which the harness sets itself from "
            f"{HARNESS_FLAGS[flag]}; sweep another server flag."
        )
    if flag in taken:
        raise LadderError(
            f"{path}: field {field} {flag!r} is also set in sweep.args or server.args; remove it "
            "there, the sweep sets it per arm."
        )
    raw = table.get(f"{prefix}values")
    where = f"sweep.{prefix}values"
    if raw is None:
        raise LadderError(f"{path}: field sweep.{prefix}flag needs {where}; add its values.")
    texts = [value_text(v) for v in raw]
    if any(t is None for t in texts):
        bad = raw[texts.index(None)]
        raise LadderError(
            f"{path}: field {where} holds {bad!r}; list finite numbers (or plain words) the "
            "server reads after the flag."
        )
    for text in texts:
        _check_value(str(text), where, path)
    values = tuple(t for t in texts if t is not None)
    if len(values) < MIN_VALUES:
        raise LadderError(
            f"{path}: field {where} has {len(values)} value(s); a sweep needs at least "
            f"{MIN_VALUES}, or write the one setting as a [[treatments]] entry."
        )
    if len(set(values)) != len(values):
        raise LadderError(f"{path}: field {where} repeats a value; list each value once.")
    numeric = [v for v in raw if isinstance(v, int | float)]
    if len(numeric) == len(raw) and any(b <= a for a, b in pairwise(numeric)):
        raise LadderError(
            f"{path}: field {where} is {raw!r}; list the values from low to high (the "
            "step-down's order and the picture read them along the setting)."
        )
    name = table.get(f"{prefix}name", default_name(flag))
    check_key(name, f"sweep.{prefix}name", path)
    return SweepAxis(flag, values, name)


def _check_value(text: str, where: str, path: Path) -> None:
    """A value's text is bounded and a plain word: it is the tail of its arm's key."""
    if len(text) > MAX_VALUE_CHARS:
        raise LadderError(
            f"{path}: field {where} holds {text[:40]!r}..., {len(text)} characters; a value "
            f"has at most {MAX_VALUE_CHARS} (it names its arm's files), so shorten it."
        )
    if VALUE_TEXT.fullmatch(text) is None:
        raise LadderError(
            f"{path}: field {where} holds {text!r}; a value is a number or one plain word "
            "(letters, digits, '.', '_', '+', '-'; no spaces), as the server reads it."
        )


def parse(raw: dict[str, Any], path: Path) -> Sweep | None:
    """The `[sweep]` table checked whole, or None for a ladder without one."""
    table = raw.get("sweep")
    if table is None:
        return None
    if not isinstance(table, dict):
        raise LadderError(f"{path}: field 'sweep' must be a table; write it as [sweep].")
    check_table(table, SWEEP, "sweep.", path)
    if table["from"] not in ENDS:
        raise LadderError(
            f'{path}: field sweep.from is {table["from"]!r}; use "high" (the step-down starts '
            'at the highest value) or "low".'
        )
    if ("grid_flag" in table) != ("grid_values" in table):
        raise LadderError(
            f"{path}: sweep.grid_flag and sweep.grid_values come as a pair; give both (a grid of "
            "two settings) or neither."
        )
    shared = str_list(table.get("args", []), "sweep.args", path)
    for arg in shared:
        flag = arg.split("=", 1)[0]
        if flag in HARNESS_FLAGS:
            raise LadderError(
                f"{path}: field sweep.args sets {flag}, which the harness sets itself from "
                f"{HARNESS_FLAGS[flag]}; remove it from sweep.args."
            )
    server = raw.get("server", {}).get("args", [])
    taken = {a.split("=", 1)[0] for a in (*shared, *server) if isinstance(a, str)}
    axes = [_axis(table, "", path, taken)]
    if "grid_flag" in table:
        axes.append(_axis(table, "grid_", path, taken | {axes[0].flag}))
    if len(axes) == 2 and axes[0].name == axes[1].name:
        raise LadderError(
            f"{path}: sweep.name and sweep.grid_name are both {axes[0].name!r}; give the grid's "
            "axis another grid_name."
        )
    count = len(axes[0].values) * (len(axes[1].values) if len(axes) == 2 else 1)
    if count > MAX_SWEEP_ARMS:
        raise LadderError(
            f"{path}: [sweep] makes {count} arms, over the {MAX_SWEEP_ARMS} a run can hold "
            "(each is a model load per cycle); sweep fewer values."
        )
    arms = tuple(_keys(axes))
    for key in arms:
        check_key(key, "sweep arm key", path)
    return Sweep(tuple(axes), shared, table["from"], arms)


def _keys(axes: list[SweepAxis]) -> list[str]:
    first = [f"{axes[0].name}_{v}" for v in axes[0].values]
    if len(axes) == 1:
        return first
    return [f"{a}_{axes[1].name}_{v}" for a in first for v in axes[1].values]


def with_arms(
    treatments: tuple[Treatment, ...], sweep: Sweep | None, table: dict[str, Any], path: Path
) -> tuple[Treatment, ...]:
    """The declared treatments, then one per arm (its shared args, then its flags and values)."""
    if sweep is None:
        return treatments
    declared = {t.key for t in treatments}
    clash = [k for k in sweep.arms if k in declared]
    if clash:
        raise LadderError(
            f"{path}: [[treatments]] key {clash[0]!r} is also a [sweep] arm; rename the "
            "treatment (the sweep's arms are keyed name_value)."
        )
    step = table.get("memory_step_mib")
    out = list(treatments)
    for key in sweep.arms:
        args = list(sweep.shared_args)
        for axis, value in zip(sweep.axes, sweep.values_of(key), strict=True):
            args += [axis.flag, value]
        out.append(Treatment(key, tuple(args), float(step) if step is not None else None))
    return tuple(out)


def treatments_with_sweep(
    raw: dict[str, Any], path: Path, treatments: tuple[Treatment, ...]
) -> tuple[Sweep | None, tuple[Treatment, ...]]:
    """The sweep of the document and the treatments with its arms added."""
    sweep = parse(raw, path)
    return sweep, with_arms(treatments, sweep, raw.get("sweep") or {}, path)
