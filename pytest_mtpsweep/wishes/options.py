"""Every command-line option, declared once: pytest's `--ladder` family and the `mtpsweep` CLI
both register from this table (`OPTIONS`, the shared ones; each kind declares its own in its
`kindapi.Kind`, and callers pass them in), and `RunRequest` is built from it. No option dest
travels past this module; the rest of the package sees domain names only.
"""

from __future__ import annotations

import argparse
import math
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

from ..base.constants import BOOT
from ..base.errors import OptionError
from .request import AnalysisRequest, PreflightRequest, RunRequest

if TYPE_CHECKING:
    import datetime as dt

    import pytest

    from .request import RunRequest

# What a run reads lives in request.py, imported when a run is built: this module is loaded by
# every pytest process of an environment where the package is installed, --ladder or not.


MAX_WAIT_FOR_QUIET_S = 24 * 3600.0  # rig/busyhost.py's MAX_WAIT_S: a run may wait out a nightly job


def _finite_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"{text!r} is not a finite number")
    return value


class Opt(NamedTuple):
    """One option: its flag, its dest (shared by pytest and argparse) and its help."""

    flag: str
    name: str  # the domain name RunRequest reads it by
    help: str = ""
    type: Callable[[str], Any] | None = None
    default: Any = None
    action: str | None = None
    metavar: str | None = None
    choices: tuple[str, ...] | None = None
    overrides: str | None = None  # the ladder field (dotted) it overrides

    @property
    def dest(self) -> str:
        return f"mtpsweep_{self.name}"

    def kwargs(self) -> dict[str, Any]:
        kw: dict[str, Any] = {"dest": self.dest, "help": self.help}
        if self.action:
            kw["action"] = self.action
            if self.action == "append":
                kw["default"] = []
        else:
            kw["default"] = self.default
        for key in ("type", "metavar", "choices"):
            if getattr(self, key) is not None:
                kw[key] = getattr(self, key)
        return kw


OPTIONS: tuple[Opt, ...] = (
    Opt(
        "--ladder",
        "ladder",
        "run this ladder (a name under ladders/ or a .toml path)",
        metavar="NAME|FILE",
    ),
    Opt(
        "--model",
        "model",
        "model file (overrides the ladder)",
        metavar="GGUF",
        overrides="model.path",
    ),
    Opt(
        "--server-bin",
        "server_bin",
        "llama-server executable (before MTPSWEEP_SERVER_BIN and the ladder)",
        metavar="PATH",
    ),
    Opt(
        "--max-tokens",
        "max_tokens",
        "tokens per request (overrides the ladder)",
        int,
        metavar="N",
        overrides="max_tokens",
    ),
    Opt(
        "--seed", "seed", "sampling seed (overrides the ladder)", int, metavar="N", overrides="seed"
    ),
    Opt(
        "--temperature",
        "temperature",
        "sampling temperature (overrides the ladder)",
        _finite_float,
        metavar="T",
        overrides="temperature",
    ),
    Opt(
        "--cycles",
        "cycles",
        "number of cycles (odd: ladder order, even: reversed)",
        int,
        metavar="N",
        overrides="cycles",
    ),
    Opt(
        "--repeats",
        "repeats",
        "runs of each prompt per session, averaged before pairing (overrides the ladder)",
        int,
        metavar="N",
        overrides="repeats",
    ),
    Opt(
        "--prompts-dir",
        "prompts_dir",
        "a prompt set directory instead of the ladder's",
        metavar="DIR",
    ),
    Opt(
        "--base-url",
        "base_url",
        "attach the ladder's one treatment to the server at URL (a trailing /v1 is fine); nothing is started or stopped",
        metavar="URL",
    ),
    Opt(
        "--port",
        "port",
        "server port (0: a free port per session)",
        int,
        metavar="PORT",
        overrides="server.port",
    ),
    Opt(
        "--run-dir",
        "run_dir",
        "run directory to create (must not exist; default runs/<ladder>/<run-id>)",
        metavar="DIR",
    ),
    Opt("--note", "note", "a note recorded with every record", metavar="TEXT", overrides="note"),
    Opt(
        "--placement",
        "placement",
        "how the model is placed on the hardware (a comparability key)",
        metavar="TEXT",
        overrides="placement",
    ),
    Opt(
        "--deadline",
        "deadline",
        "local time by which the run must end; sessions are dropped in the pre-registered order if it would overrun",
        metavar="HH:MM",
    ),
    Opt(
        "--time-budget",
        "time_budget",
        "like --deadline, as a duration from the start: 90s, 10m, 1h30m",
        metavar="DURATION",
    ),
    Opt(
        "--resume",
        "resume",
        "continue an interrupted run with the same ladder and options",
        metavar="RUN_DIR",
    ),
    Opt(
        "--no-warmup", "no_warmup", "skip the warm-up request at session start", action="store_true"
    ),
    Opt(
        "--no-calibration",
        "no_calibration",
        "skip the calibration prompt at session start and end",
        action="store_true",
    ),
    Opt(
        "--baseline",
        "baseline",
        "contrast against this treatment (default: the ladder's baseline)",
        metavar="TREATMENT",
    ),
    Opt(
        "--boot",
        "boot",
        f"bootstrap resamples (default {BOOT.default}, {BOOT.min} to {BOOT.max})",
        int,
        BOOT.default,
        metavar="N",
    ),
    Opt(
        "--boot-seed",
        "boot_seed",
        f"bootstrap seed (default {BOOT.seed})",
        int,
        BOOT.seed,
        metavar="N",
    ),
    Opt(
        "--expect",
        "expect",
        "a gate: a test item that fails unless the analysis supports this (repeatable)",
        action="append",
        metavar="TREATMENT:SUBSET:faster|slower|equivalent|not-slower:M",
    ),
    Opt(
        "--history",
        "history",
        "append each gate's verdict to this JSON-lines file (read it with mtpsweep history FILE)",
        metavar="FILE",
    ),
    Opt("--no-analysis", "no_analysis", "do not analyse at session end", action="store_true"),
    Opt(
        "--preflight-only",
        "preflight_only",
        "run the preflight checks, print the table, start nothing",
        action="store_true",
    ),
    Opt(
        "--waive",
        "waive",
        "let this preflight item fail without stopping the run (recorded)",
        action="append",
        metavar="ITEM",
    ),
    Opt(
        "--against",
        "against",
        "say per preflight item whether it is identical to that earlier run's",
        metavar="RUN_DIR",
    ),
    Opt(
        "--verify-digests",
        "verify_digests",
        "re-hash model files instead of trusting the digest cache",
        action="store_true",
    ),
    Opt(
        "--wait-for-quiet",
        "wait_for_quiet",
        f"when preflight finds the host busy (host_quiet), wait up to SECONDS for quiet (at most {MAX_WAIT_FOR_QUIET_S:g}), then run or stop",
        _finite_float,
        metavar="SECONDS",
    ),
    Opt(
        "--server-build",
        "server_build",
        "the server build this run must use, e.g. 515e85511 or b11434",
        metavar="BUILD",
    ),
)
BY_NAME: dict[str, Opt] = {o.name: o for o in OPTIONS}
# What `mtpsweep preflight` takes: the ladder, what decides the rig, and preflight's own.
PREFLIGHT_CLI = (
    "ladder",
    "model",
    "server_bin",
    "base_url",
    "port",
    "server_build",
    "waive",
    "against",
    "verify_digests",
    "wait_for_quiet",
)


def table(kinds: Iterable[Opt] = ()) -> tuple[Opt, ...]:
    """The shared options, then the kinds' own; a kind may not take a shared flag or name."""
    out = list(OPTIONS)
    for opt in kinds:
        clash = next((o for o in out if opt.flag == o.flag or opt.name == o.name), None)
        if clash is not None and clash != opt:
            raise OptionError(
                f"option {opt.flag} ({opt.name}) of an installed kind clashes with {clash.flag} "
                f"({clash.name}); the kind must name its options differently."
            )
        if clash is None:
            out.append(opt)
    return tuple(out)


def add_pytest_options(parser: pytest.Parser, opts: Sequence[Opt] = OPTIONS) -> None:
    """Register every option in pytest's `mtpsweep` group."""
    group = parser.getgroup("mtpsweep", "LLM inference-server experiments (pytest-mtpsweep)")
    for opt in opts:
        group.addoption(opt.flag, **opt.kwargs())


def add_argparse_options(parser: argparse.ArgumentParser, names: Iterable[str]) -> None:
    """Register the named options on an argparse (sub)parser, with the same dests."""
    for name in names:
        opt = BY_NAME[name]
        kwargs = opt.kwargs()
        if name == "ladder":
            kwargs["required"] = True
        parser.add_argument(opt.flag, **kwargs)


def values_from(getter: Callable[[str], Any], opts: Sequence[Opt] = OPTIONS) -> dict[str, Any]:
    """Option values by domain name, read through `getter(dest)` (pytest or argparse)."""
    return {o.name: getter(o.dest) for o in opts}


def _given(opt: Opt, value: Any) -> bool:
    # an unset flag (store_true: False, append: []) leaves the ladder's value alone
    return value is not None and not (opt.action == "store_true" and value is False) and value != []


def _path(value: Any) -> Path | None:
    return Path(value).expanduser() if value else None


def run_request(
    values: Mapping[str, Any],
    *,
    search_dirs: Iterable[Path],
    cwd: Path,
    invocation: Iterable[str],
    opts: Sequence[Opt] = OPTIONS,
) -> RunRequest:
    """A RunRequest from option values by domain name; bad combinations are OptionErrors.

    `opts` is the table the values were read by: the shared options and the kinds' own."""
    import datetime as dt

    v = dict(values)
    overrides = {
        o.overrides: v[o.name] for o in opts if o.overrides is not None and _given(o, v.get(o.name))
    }
    shared = {o.name for o in OPTIONS}
    kind_options = {
        o.name: v[o.name] for o in opts if o.name not in shared and _given(o, v.get(o.name))
    }
    if v.get("resume") and v.get("run_dir"):
        raise OptionError("--resume continues its own run directory; drop --run-dir.")
    boot = v.get("boot")
    boot = BOOT.default if boot is None else boot
    seed = v.get("boot_seed")
    seed = BOOT.seed if seed is None else seed
    check_bootstrap(boot, seed)
    # A bad deadline is a usage error now, not a surprise an hour into the run.
    if v.get("deadline"):
        parse_deadline(str(v["deadline"]), dt.datetime.now())
    if v.get("time_budget"):
        parse_duration(str(v["time_budget"]))
    wait = check_wait_for_quiet(v.get("wait_for_quiet"))
    history = _path(v.get("history"))
    if history is not None:
        check_history(history)
    run_dir = _path(v.get("run_dir"))
    if run_dir is not None:
        check_run_dir(run_dir if run_dir.is_absolute() else cwd / run_dir)
    return RunRequest(
        ladder=str(v["ladder"]),
        search_dirs=tuple(search_dirs),
        cwd=cwd,
        invocation=tuple(invocation),
        overrides=overrides,
        kind_options=kind_options,
        prompts_dir=_path(v.get("prompts_dir")),
        server_bin=v.get("server_bin"),
        base_url=v.get("base_url") or None,
        run_dir=_path(v.get("run_dir")),
        resume=_path(v.get("resume")),
        warmup=not v.get("no_warmup"),
        calibration=not v.get("no_calibration"),
        deadline=v.get("deadline"),
        time_budget=v.get("time_budget"),
        preflight=PreflightRequest(
            only=bool(v.get("preflight_only")),
            waive=frozenset(v.get("waive") or ()),
            against=_path(v.get("against")),
            verify_digests=bool(v.get("verify_digests")),
            server_build=v.get("server_build"),
            wait_for_quiet_s=wait,
        ),
        analysis=AnalysisRequest(
            enabled=not v.get("no_analysis"),
            baseline=v.get("baseline"),
            boot=boot,
            seed=seed,
            expect=tuple(v.get("expect") or ()),
            history=history,
        ),
    )


def check_wait_for_quiet(value: Any) -> float:
    """--wait-for-quiet's seconds (0 when not given), within its bound."""
    if value is None:
        return 0.0
    seconds = float(value)
    if not 0 <= seconds <= MAX_WAIT_FOR_QUIET_S:
        raise OptionError(
            f"--wait-for-quiet {value:g} is not a wait this run can make; give 0 to "
            f"{MAX_WAIT_FOR_QUIET_S:g} seconds (a day)."
        )
    return seconds


def describe_overrides(overrides: Mapping[str, Any], opts: Sequence[Opt] = OPTIONS) -> str:
    """The overrides as the command line said them: `--max-tokens 1 --port 0`."""
    flags = {o.overrides: o.flag for o in opts if o.overrides}
    return " ".join(f"{flags.get(k, k)} {v}" for k, v in overrides.items())


MAX_TIME_BUDGET_S = 7 * 24 * 3600


def parse_duration(text: str) -> float:
    """Seconds in `90s`, `10m`, `1h30m`, `2h`."""
    m = re.fullmatch(r"\s*(?:(\d+)h)?\s*(?:(\d+)m)?\s*(?:(\d+)s)?\s*", text)
    if not text.strip() or m is None or not any(m.groups()):
        raise OptionError(
            f"--time-budget {text!r} is not a duration; write it like 90s, 10m, 1h30m or 2h."
        )
    # Ints, each of at most 9 digits: int() refuses 4,300 digits and float() overflows sooner.
    too_long = any(g and len(g) > 9 for g in m.groups())
    h, mi, s = (0, 0, 0) if too_long else (int(g) if g else 0 for g in m.groups())
    seconds = h * 3600 + mi * 60 + s
    if too_long or seconds > MAX_TIME_BUDGET_S:
        shown = text if len(text) <= 40 else f"{text[:40]}..."
        raise OptionError(
            f"--time-budget {shown!r} is longer than a run may plan for; give at most "
            f"{MAX_TIME_BUDGET_S // 3600}h (a week), or no budget."
        )
    return float(seconds)


def parse_deadline(text: str, now: dt.datetime) -> dt.datetime:
    """The next local `HH:MM` after `now` (tomorrow if that time has passed today)."""
    m = re.fullmatch(r"(\d{1,2}):(\d{2})", text.strip())
    if m is None or int(m.group(1)) > 23 or int(m.group(2)) > 59:
        raise OptionError(
            f"--deadline {text!r} is not a local time; write it as HH:MM, e.g. 04:00."
        )
    import datetime

    at = now.replace(hour=int(m.group(1)), minute=int(m.group(2)), second=0, microsecond=0)
    return at if at > now else at + datetime.timedelta(days=1)


def check_bootstrap(boot: int, seed: int) -> None:
    """--boot and --boot-seed, checked before anything runs."""
    if boot < BOOT.min:
        raise OptionError(
            f"--boot {boot} is too few resamples for a stable 95 % interval; use {BOOT.min} or "
            f"more (default {BOOT.default})."
        )
    if boot > BOOT.max:
        raise OptionError(
            f"--boot {boot} is more resamples than the analysis holds in memory; use at most "
            f"{BOOT.max} (default {BOOT.default})."
        )
    if seed < 0:
        raise OptionError(
            f"--boot-seed {seed} is negative; use a seed of 0 or more (default {BOOT.seed})."
        )


def check_run_dir(path: Path) -> None:
    """--run-dir, before any work: a folder to make, never a link, a file, a FIFO or a folder
    inside another run (whose readers would take the new run's files for its own)."""
    from ..base.fileio import output_dir_problem

    why = output_dir_problem(path)
    # a folder that cannot be made (under a file, /proc) is the run directory's writer's to say
    if why is not None and not why.startswith(("is under", "cannot be made")):
        raise OptionError(f"--run-dir {path} {why}; name a new folder outside any run.")


def check_history(path: Path) -> None:
    """--history, before any work: a file that can be appended to (its folder exists)."""
    if path.is_dir():
        raise OptionError(
            f"--history {path} is a folder; name a file in it, e.g. {path / 'gates.jsonl'}."
        )
    if not path.parent.is_dir():
        raise OptionError(
            f"--history {path}: its folder {path.parent} does not exist; create it or name "
            "another file."
        )
    from ..base.fileio import output_problem
    from ..base.recordlines import first_has
    from ..base.schema import HISTORY_REQUIRED

    # a new file, or one of gate entries: never a link (it could point at a system file), a
    # FIFO, a ladder or a run's document, and one this process can write
    why = output_problem(
        path, looks_right=lambda head: first_has(head, HISTORY_REQUIRED), what="gate entries"
    )
    if why is not None:
        raise OptionError(
            f"--history {path} {why}; name a new file or one --history wrote (the run has not "
            "started)."
        )
