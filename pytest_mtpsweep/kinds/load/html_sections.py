"""The load kind's sections of report.html, read from what its analysis wrote.

The findings are report.md's own text (so the page and the file cannot disagree): question,
scope and headline, with the headline endpoint's gain per level and its interaction as one
small table (load_contrasts.csv, load_interaction.csv); then Limitations, report.md's and,
when a block's client lag is flagged, the witnesses' client-lag line; then the plots this
analysis drew; then the detail collapsed: report.md's tables, every block (load_blocks.csv)
and every request (the records), filterable. Every value a server, a model or a ladder wrote
reaches the page through the escaping builder.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from ... import schema
from ...report import images, write_report_html
from ...report import mdhtml as md
from ...report.document import Markup, PageSection, el, join
from ...report.tables import filterable, table
from ...state.runread import RunReader, read_table
from . import frame
from .contrast import Row
from .report import NAMES, gain

# report.md's sections shown above (headline, limitations, pictures), not again below
FIRST = ("Headline", "Limitations", "Plots")
# the detail, in this order; report.md's other sections (Design) follow them
DETAIL = ("Per level", "Per turn", "Contrasts per level", "Interaction", "Witnesses")
# (file, alt text, caption) in the order the page shows them: the headline's picture first
PLOTS = (
    ("load_capacity.png", "attainment of the SLOs against the level",
     "A capacity search: the share of each treatment's requests within every SLO target "
     "against the level probed (pooled over cycles, Wilson 95 % bars), the target dotted, each "
     "treatment's capacity dashed."),
    ("load_gain.png", "gain against the level",
     "Each endpoint's gain over the baseline against the level with its 95 % interval, on a "
     "log axis of the gain factor; an interval past -75 % or +300 % ends in an arrow at the "
     "edge. Where the headline endpoint's gain crosses zero: a dashed line, its interval "
     "shaded."),
    ("load_turns.png", "TTFT and the prompt cached by turn",
     "A conversation run: each treatment's TTFT median by turn with its 95 % interval (left) "
     "and the share of the prompt tokens the server reported cached (right), a line per level."),
    ("load_latency.png", "latency percentiles against the level",
     "TTFT, ITL (every chunk gap) and e2e against the level, per treatment: p50 solid, p90 "
     "dashed, p99 dotted, on a log axis."),
    ("load_throughput.png", "throughput against the level",
     "Output tokens/s and requests/s against the level: the mean over cycles (line), each "
     "cycle's block a dot."),
    ("load_timeline.png", "the trace replay over time",
     "A trace replay over its block's time: the trace's arrivals as replayed (the same in every "
     "session), the requests in flight and each request's TTFT (from its trace time) at its "
     "time, one colour per treatment, one line style per cycle."),
)  # fmt: skip
_IMAGE = re.compile(r"!\[[^\]]*\]\(([^)\s]+)\)")
BLOCK_HEADERS = ("treatment", "cycle", "session", "level", "block", "valid", "completed",
                 "out tok/s", "req/s", "goodput req/s", "queued", "slots", "max in flight",
                 "/slots busy max", "/metrics waiting max", "drafted", "accepted",
                 "client lag p99 ms", "span s", "notes")  # fmt: skip
BLOCK_FACETS = ("treatment", "cycle", "level", "valid")
REQUEST_HEADERS = ("treatment", "cycle", "level", "slot", "lane", "prompt", "TTFT ms",
                   "ITL mean ms", "e2e ms", "output tokens", "finish", "status", "flags")  # fmt: skip
TURN_HEADERS = ("conversation/turn", "cached tokens")  # a conversation run's requests add them
REQUEST_FACETS = ("treatment", "cycle", "level", "prompt", "status")


def _csv(path: Path) -> list[dict[str, str]]:
    return read_table(path).dicts()


def _float(value: object) -> float:
    try:
        return float(str(value))
    except ValueError:
        return math.nan


def _int(value: object) -> int:
    number = _float(value)
    return int(number) if math.isfinite(number) else 0


def _row(r: Mapping[str, str]) -> Row:
    """A contrast or interaction row as the analysis wrote it to CSV."""
    return Row(
        r.get("treatment", ""), r.get("baseline", ""), r.get("endpoint", ""), r.get("level", ""),
        _float(r.get("gain_pct")), _float(r.get("ci_low")), _float(r.get("ci_high")),
        _int(r.get("n_prompts")), _int(r.get("n_pairs")), _int(r.get("cycles")),
        _float(r.get("se_log")), _float(r.get("df")), r.get("method", ""),
        _float(r.get("gain_low_pct")), _float(r.get("gain_high_pct")),
    )  # fmt: skip


def _headline_table(out: Path, endpoint: str) -> Markup:
    """The headline endpoint's gain per level and its change from the lowest to the highest,
    one row per contrast: report.md's headline lines, side by side."""
    rows = [_row(r) for r in _csv(out / "load_contrasts.csv") if r.get("endpoint") == endpoint]
    inter = [_row(r) for r in _csv(out / "load_interaction.csv") if r.get("endpoint") == endpoint]
    if not rows:
        return Markup("")
    levels = list(dict.fromkeys(r.level for r in rows))
    spans = list(dict.fromkeys(r.level for r in inter))
    body = []
    for t, b in dict.fromkeys((r.treatment, r.baseline) for r in rows):
        at = {r.level: gain(r) for r in rows if (r.treatment, r.baseline) == (t, b)}
        change = {r.level: gain(r) for r in inter if (r.treatment, r.baseline) == (t, b)}
        body.append([f"{t} vs {b}", *(at.get(lv, "-") for lv in levels),
                     *(change.get(s, "-") for s in spans)])  # fmt: skip
    headers = ["contrast", *levels, *(f"gain change {s}" for s in spans)]
    caption = el(
        "p",
        f"{NAMES.get(endpoint, endpoint)} gain [95% CI] at each level, and how the gain factor "
        "changes from the lowest level to the highest:",
        class_="label",
    )
    return join([caption, table(headers, body, table_id="headline-table")])


def _headline(doc: md.Document, out: Path, endpoint: str) -> Markup:
    title = next((t for t, _ in doc.sections if t.startswith("Headline")), "Headline")
    return el(
        "div",
        md.render(doc.preamble),
        el("h3", title),
        md.render(doc.section("Headline") or "No headline: the analysis formed no contrast."),
        _headline_table(out, endpoint),
        id="headline",
    )


def _limitations(doc: md.Document) -> Markup:
    """report.md's limitations (a block over the client-lag bound among them)."""
    lines = [x for x in (doc.section("Limitations") or "").splitlines() if x.strip()]
    return md.render("\n".join(lines) or "- The analysis recorded no limitation of this run.")


def _pictures(out: Path, doc: md.Document) -> Markup:
    # report.md lists what this analysis drew: a plot left from an earlier one is not shown
    drawn = set(_IMAGE.findall(doc.section("Plots") or ""))
    shown = [
        images.png((out / name).read_bytes(), alt, caption)
        for name, alt, caption in PLOTS
        if name in drawn and (out / name).is_file()
    ]
    if shown:
        return join(shown)
    if not images.available():
        return images.missing("The load plots")
    return el("p", "This analysis drew no plot (no level had a completed request).", class_="note")


def _value(text: str) -> object:
    """A CSV field as a number where it is one (shown right-aligned), else as it is."""
    if text == "":
        return None
    try:
        return int(text)
    except ValueError:
        pass
    number = _float(text)
    return number if math.isfinite(number) else text


def _yes(text: object) -> str:
    return {"True": "yes", "False": "no"}.get(str(text), str(text))


def _blocks(blocks: Sequence[Mapping[str, str]]) -> Markup:
    rows = []
    for b in blocks:
        notes = [b.get("reason") or "", b.get("lag_flag") or ""]
        if b.get("timed_out") == "True":
            notes.append("timed out")
        rows.append([
            b.get("treatment", ""), _value(b.get("cycle", "")), b.get("session", ""),
            b.get("level", ""), _value(b.get("block", "")), _yes(b.get("valid")),
            f"{b.get('completed', '')}/{b.get('requests', '')}",
            *(_value(b.get(k, "")) for k in ("output_tok_s", "req_s", "goodput_req_s", "queued",
                                            "total_slots", "max_in_flight", "busy_slots_max",
                                            "waiting_max", "drafted", "accepted",
                                            "client_lag_p99_ms", "span_s")),
            "; ".join(n for n in notes if n),
        ])  # fmt: skip
    if not rows:
        return el("p", "No block was recorded (load_blocks.csv is empty).", class_="note")
    lead = el("p", f"Every level block, {len(rows)} rows (load_blocks.csv): throughput is the "
                   "block's own; notes say why a block is not valid or is flagged.")  # fmt: skip
    return join([lead, filterable("block-rows", BLOCK_HEADERS, rows, BLOCK_FACETS)])


def _request_records(run_dir: Path) -> list[dict[str, Any]]:
    """Every request line; a line repeated (a resumed block) counts once, the last one."""
    last: dict[tuple[str, str, str], dict[str, Any]] = {}
    # read by the analysis' own rule: a line it left out (report.md names it) is not shown
    for r in (
        RunReader(run_dir).records(schema.RECORDS_DIR, frame.types_for, frame.REQUIRED).records
    ):
        if r.get("record") == "request":
            last[(str(r.get("session")), str(r.get("level")), str(r.get("request")))] = r
    return list(last.values())


def _ms(value: object) -> str | None:
    ok = isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)
    return f"{value:.1f}" if ok else None


def _flags(r: Mapping[str, Any], bound: float) -> str:
    flags = []
    if r.get("reason"):
        flags.append(str(r["reason"]))
    status = r.get("http_status")
    if status not in (None, 200):
        flags.append(f"HTTP {status}")
    if r.get("queued"):
        flags.append("queued (every slot held another)")
    lag = _float(r.get("client_lag_max_ms"))
    if math.isfinite(bound) and lag > bound:
        flags.append(f"client lag {lag:.1f} ms > {bound:g} ms")
    return "; ".join(flags)


def _turn(r: Mapping[str, Any]) -> tuple[str | None, object]:
    """A conversation request's slot (`3/2`: conversation 3, turn 2) and its cached tokens
    (or what its cache status says instead)."""
    if r.get("turn") is None:
        return None, None
    cached = r.get("cached_tokens") if r.get("cache_status") == "ok" else r.get("cache_status")
    return f"{r.get('conversation')}/{r.get('turn')}", cached


def _requests(run_dir: Path, plan: Mapping[str, Any]) -> Markup:
    records = _request_records(run_dir)
    if not records:
        return el("p", "No request was recorded.", class_="note")
    bound = _float((plan.get("load") or {}).get("lag_bound_ms"))
    talk = any(r.get("turn") is not None for r in records)
    rows = [
        [r.get("treatment"), r.get("cycle"), r.get("level"), r.get("request"), r.get("lane"),
         r.get("prompt_id"), _ms(r.get("ttft_ms")), _ms(r.get("itl_mean_ms")),
         _ms(r.get("e2e_ms")), r.get("output_tokens"), r.get("finish_reason"),
         "ok" if r.get("valid") else "failed", _flags(r, bound),
         *(_turn(r) if talk else ())]
        for r in records
    ]  # fmt: skip
    lead = el(
        "p",
        f"Every request, {len(rows)} rows (the records): slot is its place in the schedule every "
        "treatment shares (a treatment's slot i pairs with the baseline's slot i of the same "
        "cycle and level), lane its connection; latencies count from the intended send time.",
    )
    headers = REQUEST_HEADERS + (TURN_HEADERS if talk else ())
    return join([lead, filterable("request-rows", headers, rows, REQUEST_FACETS)])


def sections(run_dir: Path) -> list[PageSection]:
    """report.html's sections for a load run, from <run>/analysis and the records."""
    out = run_dir / schema.ANALYSIS_DIR
    doc = md.split((out / schema.REPORT_MD).read_text(encoding="utf-8"))
    plan = RunReader(run_dir).plan
    endpoint = str((plan.get("load") or {}).get("endpoint", "e2e"))
    blocks = _csv(out / "load_blocks.csv")
    named = {title: body for title, body in doc.sections}
    ordered = [t for name in DETAIL for t in named if t.startswith(name)]
    ordered += [t for t in named if t not in ordered and not t.startswith(FIRST)]
    return [
        PageSection("Question and headline", _headline(doc, out, endpoint), anchor="question"),
        PageSection("Limitations", _limitations(doc), anchor="limitations"),
        PageSection("Pictures", _pictures(out, doc), anchor="pictures"),
        *(PageSection(title, md.render(named[title]), open=False) for title in ordered),
        PageSection("Every block", _blocks(blocks), open=False, anchor="blocks"),
        PageSection("Every request", _requests(run_dir, plan), open=False, anchor="requests"),
    ]


def write(run_dir: Path) -> Path:
    """<run>/analysis/report.html, beside the report.md the load analysis wrote."""
    from ...errors import AnalysisError

    try:
        return write_report_html(run_dir, sections(run_dir))
    except OSError as exc:
        raise AnalysisError(
            f"cannot write {run_dir}/{schema.ANALYSIS_DIR}/report.html ({exc.strerror}); check "
            "that the run directory is writable"
        ) from None
