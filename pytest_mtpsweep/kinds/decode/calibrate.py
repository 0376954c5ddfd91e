"""`mtpsweep calibrate RUN --margin M`: an A/A run's noise, as the calibration file a
not-slower gate cites (`--gate-calibration FILE`), and the check that a cited one is fresh.

An A/A run is a decode run whose baseline and one other treatment (`aa` by default) carry the
same server arguments and build, interleaved as the gate's two builds will be (ABBA); its
contrast is noise alone. Each subset's cell gives the variance components, the noise floor at
the gate's planned cycles and the simulated false-alarm rate of the margin
(`analysis/calibration.py`). Host identity: the run directory records no host name, so the
fingerprint is taken where calibrate runs (it must run where the A/A ran: the hostname, the
CPU's features as the build cache keys them, the CPU count and the run's placement); a gate
checks it against the host it runs on.
"""

from __future__ import annotations

import datetime as dt
import math
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ...kindapi import BOOT, SUBSETS, AnalysisError, ExitStatus, OptionError
from ...kindapi.analysis import INTERVAL, Calibration, Design, Noise
from ...kindapi.ladder import Ladder
from ...kindapi.records import atomic_write_json
from .analysis.io import load_run
from .analysis.pipeline import analyse
from .analysis.plan import cell_matrix
from .grammar import GATES

if TYPE_CHECKING:
    import argparse
    from collections.abc import Mapping

    from ...kindapi.records import PlanDoc

DEFAULT_FILE = "calibration.json"


def register(sub: Any) -> None:
    """The `calibrate` subcommand on the `mtpsweep` parser."""

    p = sub.add_parser(
        "calibrate",
        help="an A/A run's noise floor and false-alarm rate, as a file a not-slower gate cites",
        description="Read an A/A decode run (the baseline and an arm with the same server "
        "arguments), print each subset's noise floor and the margin's false-alarm rate at the "
        "gate's planned cycles, and write the calibration file.",
    )
    p.add_argument("run", metavar="RUN", help="the A/A run directory")
    p.add_argument("--margin", type=float, required=True, help="the gate's margin M, percent")
    p.add_argument(
        "--aa",
        default=None,
        help="the A/A arm (default: the one treatment whose server arguments equal the baseline's)",
    )
    p.add_argument(
        "--cycles",
        type=int,
        default=None,
        help="the gate's planned (maximum) cycles (default: the A/A run's)",
    )
    p.add_argument(
        "--spending",
        choices=("pocock", "obrien-fleming"),
        default="pocock",
        help="the gate's [stop] spending (looks after cycles 4, 6, …)",
    )
    p.add_argument(
        "--reps",
        type=int,
        default=Calibration.DEFAULT_REPS,
        help=f"A/A gates simulated ({Calibration.MIN_REPS}-{Calibration.MAX_REPS})",
    )
    p.add_argument("--boot", type=int, default=BOOT.default)
    p.add_argument("--boot-seed", type=int, default=BOOT.seed)
    p.add_argument("--out", default=None, help=f"the file (default: RUN/{DEFAULT_FILE})")
    p.set_defaults(func=calibrate_command, command="calibrate")


def _checked(args: argparse.Namespace) -> None:

    try:
        GATES.margin(str(args.margin), "--margin")
    except ValueError as exc:
        raise OptionError(f"{exc}.") from None
    if not Calibration.MIN_REPS <= args.reps <= Calibration.MAX_REPS:
        raise OptionError(
            f"--reps {args.reps} is outside {Calibration.MIN_REPS}-{Calibration.MAX_REPS}; "
            "pick one inside."
        )
    if args.cycles is not None and not 4 <= args.cycles <= Ladder.MAX_CYCLES:
        raise OptionError(
            f"--cycles {args.cycles} is outside 4-{Ladder.MAX_CYCLES} (a gate looks from cycle 4 on); "
            "pick one inside."
        )


def _out(args: argparse.Namespace) -> Path:
    """The calibration's file, checked before any work: new, or a calibration (never the run's
    own plan or records, a link, a folder or a FIFO), in a folder that can be written."""

    out = Path(args.out) if args.out else Path(args.run) / DEFAULT_FILE
    why = Calibration.output_problem(out, run_file=DEFAULT_FILE)
    if why is not None:
        raise OptionError(f"--out {out} {why}; name a new file or a calibration to replace.")
    return out


def aa_arm(plan: PlanDoc, baseline: str, wanted: str | None, run: Path) -> str:
    """The A/A arm: a treatment with the baseline's server arguments (refused otherwise)."""
    args = {t.key: list(t.args) for t in plan.treatments}
    if baseline not in args:
        raise AnalysisError(f"{run}: plan.json lists no baseline {baseline!r}; is it a decode run?")
    same = [k for k, a in args.items() if k != baseline and a == args[baseline]]
    if wanted is not None:
        if wanted not in args or wanted == baseline:
            raise OptionError(
                f"--aa {wanted}: not a treatment of {run} other than the baseline; use one of "
                f"{', '.join(k for k in args if k != baseline)}."
            )
        if wanted not in same:
            raise AnalysisError(
                f"{run} is no A/A run for {wanted}: its server arguments {args[wanted]} differ "
                f"from the baseline {baseline}'s {args[baseline]}; give the A/A arm the "
                "baseline's arguments."
            )
        return wanted
    if len(same) != 1:
        raise AnalysisError(
            f"{run} has {len(same)} treatments with the baseline {baseline}'s server arguments "
            f"({', '.join(same) or 'none'}); an A/A run has exactly one, or name it with --aa."
        )
    return same[0]


def calibrate_command(args: argparse.Namespace) -> int:
    """Analyse the A/A run, calibrate each subset's cell, print, write the file."""

    _checked(args)
    out = _out(args)
    cal = calibrate(Path(args.run), args)
    try:
        atomic_write_json(out, {**cal.to_json(), "refusal": cal.refusal()})
    except OSError as exc:
        raise OptionError(
            f"--out {out} cannot be written ({exc.strerror or exc}); name another file."
        ) from None
    for line in lines(cal):
        print(line)
    print(f"calibration: {out}")
    return ExitStatus.GATE_FAILED if cal.refusal() else ExitStatus.OK


def calibrate(run_dir: Path, args: argparse.Namespace) -> Calibration:
    """The calibration of one A/A run for a gate of this margin, cycles and spending: the
    floors at the cycles the run has (or `--cycles`), refused when a cell has fewer complete
    cycles than carry the session level, or when its arms differ beyond its own noise."""

    run = load_run(run_dir)
    result = analyse([run], boot=args.boot, seed=args.boot_seed)
    arm = aa_arm(run.plan, result.settings.baseline, args.aa, run_dir)
    rows = [
        r
        for r in result.published.to_dict(orient="records")
        if r["treatment"] == arm and r["subset"] != SUBSETS.pooled and int(r["n_pairs"]) > 0
    ]
    if not rows:
        raise AnalysisError(
            f"{run_dir} holds no {arm}/{result.settings.baseline} pairs to "
            "calibrate from; run the A/A ladder first."
        )
    noises = [_noise(result, r, run_dir) for r in rows]
    present = min(n.cycles_run for n in noises)
    top = args.cycles or present
    design = Design.plan("decided", 4, top, args.spending, None)
    for row, noise in zip(rows, noises, strict=True):
        _same_arms(row, noise, present, run_dir, result.settings.baseline)
    cells = tuple(
        noise.calibrated(
            f"{row['treatment']}:{row['subset']}",
            args.margin,
            design.looks,
            design.equivalence_confidence,
            reps=args.reps,
            seed=args.boot_seed,
        )
        for row, noise in zip(rows, noises, strict=True)
    )
    keyed = run.plan.keyed
    return Calibration(
        host=Calibration.this_host(str(keyed.get("placement", ""))),
        model_id=str(keyed.get("model_id", "")),
        model_sha256=str(keyed.get("model_sha256", "")),
        build=str(keyed.get("server_build", "")),
        created_at=dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        margin_pct=float(args.margin),
        cycles=top,
        looks=design.looks,
        levels=design.equivalence_confidence,
        run_dir=str(run_dir),
        cells=cells,
        cycles_run=present,
    )


def _noise(result: Any, row: Mapping[str, Any], run_dir: Path) -> Noise:
    """A cell's noise, with the complete cycles it was measured over (refused under the cycles
    whose interval carries the session level: its session noise would be a guess)."""

    cell = f"{row['treatment']}:{row['subset']}"
    matrix = cell_matrix(
        result.pairs, str(row["endpoint"]), str(row["treatment"]), str(row["subset"])
    )
    noise = Noise.measure(matrix, row, result.settings.confidence)
    if noise is None or noise.cycles_run < INTERVAL.session_cycles:
        have = 0 if noise is None else noise.cycles_run
        raise AnalysisError(
            f"{run_dir}: {cell} has {have} complete cycles of A/A pairs, fewer than the "
            f"{INTERVAL.session_cycles} whose spread carries the session noise; run the A/A "
            f"ladder to {INTERVAL.session_cycles} cycles or more and calibrate that."
        )
    return noise


# An A/A contrast beyond this many noise floors (at the cycles run) is no noise: ~4 standard
# errors, which a true A/A pair passes about once in 30,000 calibrations.
SAME_ARMS_FLOORS = 2.0


def _same_arms(
    row: Mapping[str, Any], noise: Noise, cycles: int, run_dir: Path, baseline: str
) -> None:
    """Refuse an "A/A" run whose arms measured differently: its noise speaks for nothing."""

    est = float(row["pct_change"])
    floor = noise.floor_pct(cycles)
    if not (math.isfinite(est) and abs(est) <= SAME_ARMS_FLOORS * floor):
        raise AnalysisError(
            f"{run_dir} is no A/A run: {row['treatment']} differs from {baseline} by "
            f"{est:+.1f} % on {row['subset']}, over {SAME_ARMS_FLOORS:g} times the "
            f"{floor:.2f} % its own noise resolves at {cycles} cycles; calibrate a run that "
            "measures one build as both arms."
        )


def lines(cal: Calibration) -> list[str]:
    """What calibrate prints: one line per cell, then the verdict."""
    out = [
        f"A/A calibration of {cal.run_dir} ({cal.model_id}, build {cal.build}, host "
        f"{cal.host.get('hostname')}): margin {cal.margin_pct:g} %, looks after cycles "
        f"{', '.join(map(str, cal.looks))}"
    ]
    for c in cal.cells:
        fa = c.false_alarm
        sd = [100.0 * math.sqrt(v) for v in (c.prompt_var, c.session_var, c.noise_var)]
        need = "beyond the bound" if c.cycles_needed is None else f"{c.cycles_needed} cycles"
        out.append(
            f"  {c.cell}: noise floor {c.noise_floor_pct:.2f} % at {cal.cycles} cycles{_from(cal)} (80 % "
            f"power), false alarms {100 * fa.count / fa.reps:.1f} % [{100 * fa.low:.1f}, "
            f"{100 * fa.high:.1f}] of {fa.reps} simulated A/A gates; the margin needs {need}; "
            f"sd prompt {sd[0]:.2f} %, session {sd[1]:.2f} %, noise {sd[2]:.2f} % "
            f"({c.prompts} prompts, {c.cycles_run} cycles)"
        )
    refusal = cal.refusal()
    if refusal:
        out.append(f"refused: {refusal}.")
    elif any(c.false_alarm.count / c.false_alarm.reps > 0.05 for c in cal.cells):
        out.append(
            "warning: above 5 % of A/A gates would fail at this margin and these cycles; "
            "widen the margin or plan more cycles."
        )
    else:
        out.append("the host resolves this margin: a gate may cite this calibration.")
    return out


def _from(cal: Calibration) -> str:
    """Where the floor's cycles are not the run's: what they were extrapolated from."""
    return "" if cal.cycles == cal.cycles_run else f" (extrapolated from the {cal.cycles_run} run)"


def check_cited(
    path: Path,
    *,
    margin_pct: float,
    model_sha256: str | None,
    max_age_days: float | None = None,
    model_id: str | None = None,
) -> str | None:
    """Why a gate cannot cite this calibration (one sentence), or None: unreadable or not as
    calibrate wrote it, another host or model, too old, or a margin below the host's floor."""

    try:
        cal = Calibration.read(path)
    except ValueError as exc:
        return f"calibration {exc}"
    placement = str(cal.host.get("placement", ""))
    stale = cal.staleness(
        host_fingerprint=Calibration.this_host(placement)["fingerprint"],
        model_sha256=model_sha256,
        now=dt.datetime.now(dt.UTC),
        max_age_days=max_age_days or Calibration.DEFAULT_AGE_DAYS,
        model_id=model_id,
    )
    if stale:
        return f"calibration {path} is stale: {stale}; run `mtpsweep calibrate` on an A/A run here"
    floor = cal.noise_floor_pct
    if margin_pct < floor:
        return (
            f"the margin {margin_pct:g} % is below the {floor:.2f} % this host resolves with "
            f"{cal.cycles} cycles by calibration {path}; widen the margin or plan more cycles"
        )
    return None
