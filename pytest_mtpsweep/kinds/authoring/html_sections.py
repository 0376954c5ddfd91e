"""The authoring kind's sections of report.html: findings, then every cell turn by turn.

It opens with report.md's own question, design, headline and Limitations (so the page and
the file cannot disagree). Read from what the run and its analysis wrote: plan.json (cohorts'
extraction), analysis/ (cohort_table.csv, report.md), cells/ and turns/ (one record per cell
and per turn) and conversations/ (each cell's messages). Each cell is a collapsed element
`#cell-<cell id>`, filterable by subject, cohort, task and outcome; the fragment
`#cell=<cell id>` opens it. Replies, artefacts and checker output are text on the page.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any
from urllib.parse import quote

from ... import recordlines as rl
from ... import schema
from ...report import mdhtml as md
from ...report.document import Markup, PageSection, el, join, write_report_html
from ...report.tables import facets, table
from ...state.runread import RunReader, read_table
from . import records
from .analysis.frame import CELL_TYPES, REQUIRED, TURN_TYPES
from .extract import extract

HEADLINE = ("Subjects x cohorts", "Cohort contrasts", "Across subjects")
TABLE = (("subject", "subject"), ("cohort", "cohort"), ("cells", "cells"),
         ("first_attempt_green", "green 1st"), ("green_after_k", "green k>1"),
         ("never_green", "never"), ("api_failure", "api fail"), ("checker_error", "chk err"),
         ("budget_stopped", "budget"), ("no_outcome", "no outcome"), ("green_rate", "green %"),
         ("mean_prompt_tokens", "prompt tok"), ("mean_completion_tokens", "compl tok"))  # fmt: skip
FACETS = ("subject", "cohort", "task", "outcome")


def _json(path: Path) -> dict[str, Any]:
    try:
        value = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return value if isinstance(value, dict) else {}


def _csv(path: Path) -> list[dict[str, str]]:
    return read_table(path).dicts()


def _number(value: str, scale: float = 1.0) -> str:
    try:
        return f"{float(value) * scale:.0f}"
    except ValueError:
        return "-"


def _headline(out: Path, doc: md.Document) -> Markup:
    """report.md's opening (question, scope, design, headline), then the tables it rests on."""
    parts = [md.render(doc.preamble)]
    rows = []
    for r in _csv(out / records.COHORT_TABLE_CSV):
        row: list[object] = [r.get(k, "") for k, _ in TABLE[:10]]
        row += [_number(r.get("green_rate", ""), 100)]
        row += [_number(r.get(k, "")) for k in ("mean_prompt_tokens", "mean_completion_tokens")]
        rows.append(row)
    parts += [
        el("h3", "Subjects x cohorts"),
        table([h for _, h in TABLE], rows, table_id="cohorts"),
    ]
    for name in ("Cohort contrasts", "Across subjects"):
        body = doc.section(name)
        if body is not None:
            parts += [el("h3", name), md.render(body)]
    return el("div", join(parts), id="headline")


def _read(run_dir: Path, folder: str, types: rl.Types) -> list[dict[str, Any]]:
    """The records of `folder` by the analysis' own rule (report.md names the lines left out)."""
    return RunReader(run_dir).records(folder, lambda _: types, REQUIRED).records


def _final_cells(run_dir: Path) -> list[dict[str, Any]]:
    """Each cell's last record (a --resume writes a later attempt after an earlier one)."""
    last: dict[str, dict[str, Any]] = {}
    for record in _read(run_dir, records.CELLS_DIR, CELL_TYPES):
        last[str(record.get("cell"))] = record
    return list(last.values())


def _turns(run_dir: Path) -> dict[tuple[str, Any], list[dict[str, Any]]]:
    out: dict[tuple[str, Any], list[dict[str, Any]]] = {}
    for record in _read(run_dir, records.TURNS_DIR, TURN_TYPES):
        out.setdefault((str(record.get("cell")), record.get("attempt")), []).append(record)
    return {k: sorted(v, key=lambda t: int(t.get("turn") or 0)) for k, v in out.items()}


def _messages(run_dir: Path, cell: Mapping[str, Any]) -> list[dict[str, str]] | None:
    name = cell.get("conversation")
    if not isinstance(name, str):
        return None
    path = (run_dir / name).resolve()
    if not path.is_relative_to(run_dir.resolve()):  # a record names a file of this run only
        return None
    messages = _json(path).get("messages")
    return [m for m in messages if isinstance(m, dict)] if isinstance(messages, list) else None


def _exchanges(messages: Sequence[Mapping[str, Any]]) -> list[tuple[str, str | None]]:
    """(what was sent, the reply) per turn; a last prompt without a reply has None."""
    out: list[tuple[str, str | None]] = []
    sent: list[str] = []
    for m in messages:
        role, content = str(m.get("role", "")), str(m.get("content", ""))
        if role == "assistant":
            out.append(("\n\n".join(sent), content))
            sent = []
        else:
            sent.append(content if role == "user" else f"[{role}]\n{content}")
    if sent:
        out.append(("\n\n".join(sent), None))
    return out


def _badge(value: object) -> Markup:
    name = str(value) if value else "no outcome"
    return el("span", name, class_=f"badge {name.replace(' ', '_')}")


def _artefact(reply: str | None, mode: str, turn: Mapping[str, Any]) -> Markup:
    digest = turn.get("artefact_sha256")
    if not digest:
        return el("p", "No artefact was extracted from this reply.", class_="note")
    found = extract(reply, mode) if reply is not None else None
    if found is None or hashlib.sha256(found.encode("utf-8")).hexdigest() != digest:
        return el(
            "p",
            f"The artefact (sha256 {digest}) is not re-extracted from the reply "
            f"by {mode!r} today; the record keeps its digest only.",
            class_="note",
        )
    return join(
        [
            el(
                "p",
                f"Extracted artefact ({mode}; its sha256 matches the turn record):",
                class_="label",
            ),
            el("pre", found),
        ]
    )


def _checker(turn: Mapping[str, Any]) -> Markup:
    facts = [f"verdict {turn.get('verdict')}"]
    for key, label in (("exit_code", "exit code"), ("check_s", "took")):
        if turn.get(key) is not None:
            value = turn[key]
            facts.append(f"{label} {value:.2f} s" if key == "check_s" else f"{label} {value}")
    if turn.get("tests_collected") is not None:
        facts.append(f"tests passed {turn.get('tests_passed')}/{turn.get('tests_collected')}")
    if turn.get("check_reason"):
        facts.append(f"reason: {turn['check_reason']}")
    if turn.get("feedback_chars"):
        facts.append(f"its output went back as the next prompt ({turn['feedback_chars']} chars)")
    parts = [
        el(
            "p",
            "Checker: ",
            _badge(turn.get("verdict")),
            " " + "; ".join(facts[1:]),
            class_="label",
        )
    ]
    if turn.get("error_first_line"):
        parts.append(el("pre", str(turn["error_first_line"])))
    return join(parts)


def _tokens(record: Mapping[str, Any], prompt: str, completion: str) -> str:
    """'185 prompt + 30 completion tokens'; a count the server did not give is 'unknown'."""
    p, c = record.get("prompt_tokens"), record.get("completion_tokens")
    if p is None and c is None:
        return "tokens unknown"
    return f"{'unknown' if p is None else p}{prompt} + {'unknown' if c is None else c}{completion}"


def _turn(turn: Mapping[str, Any], sent: str, reply: str | None, mode: str) -> Markup:
    tokens = _tokens(turn, " prompt", " completion tokens")
    head: list[Markup | str] = [
        f"Turn {turn.get('turn')} ",
        _badge(turn.get("verdict")),
        f" {tokens}",
    ]
    if isinstance(turn.get("latency_s"), int | float):
        head.append(f", {turn['latency_s']:.2f} s")
    if turn.get("finish_reason"):
        head.append(f", finish {turn['finish_reason']}")
    if turn.get("reply_cached"):
        head.append(", from the reply cache")
    body = [el("h4", *head), el("p", "Prompt:", class_="label"), el("pre", sent)]
    if reply is None:
        why = str(turn.get("api_error") or "no reply came back")
        status = turn.get("http_status")
        if status is not None and str(status) not in why:
            why += f" (HTTP {status})"
        body.append(el("p", f"No reply: {why}.", class_="note"))
    else:
        body += [el("p", "Reply:", class_="label"), el("pre", reply), _artefact(reply, mode, turn)]
        body.append(_checker(turn))
    return el("div", *body, class_="turn")


def _cell(
    i: int,
    cell: Mapping[str, Any],
    turns: Sequence[Mapping[str, Any]],
    messages: list[dict[str, str]] | None,
    mode: str,
) -> Markup:
    name = str(cell.get("cell"))
    summary = el(
        "summary",
        el("code", name),
        f" {cell.get('subject')} · {cell.get('cohort')} · {cell.get('task')} · "
        f"r{cell.get('repeat')} ",
        _badge(cell.get("outcome")),
        f" {cell.get('turns_used') or 0} turn(s), {_tokens(cell, '', ' tokens')} ",
        el("a", "link", href=f"#cell={quote(name, safe='')}", class_="permalink"),
    )
    facts = [
        f"{k.replace('_', ' ')}: {cell[k]}"
        for k in ("reason", "api_error", "checker_error", "green_turn", "sampling_seed", "attempt")
        if cell.get(k) not in (None, "")
    ]
    body: list[Markup] = [el("p", "; ".join(facts), class_="note")] if facts else []
    if messages is None and not cell.get("conversation"):
        body.append(el("p", "No conversation was held: the cell never started.", class_="note"))
    elif messages is None:
        body.append(el("p", f"No conversation file: {cell.get('conversation')}.", class_="note"))
    else:
        exchanges = _exchanges(messages)
        for k, turn in enumerate(turns):
            sent, reply = (
                exchanges[k] if k < len(exchanges) else ("(not in the conversation)", None)
            )
            body.append(_turn(turn, sent, reply, mode))
        if len(exchanges) > len(turns):
            body += [
                el("p", "Prepared, never sent (the cell ended first):", class_="label"),
                el("pre", exchanges[-1][0]),
            ]
    return el("details", summary, *body, class_="cell", id=f"cell-{name}", data_i=i)


def _cells(run_dir: Path, plan: Mapping[str, Any]) -> Markup:
    modes = {
        str(c.get("name")): str(c.get("extract") or "fenced")
        for c in plan.get("cohorts", [])
        if isinstance(c, dict)
    }
    cells = _final_cells(run_dir)
    turns = _turns(run_dir)
    items = [
        _cell(
            i,
            c,
            turns.get((str(c.get("cell")), c.get("attempt")), []),
            _messages(run_dir, c),
            modes.get(str(c.get("cohort")), "fenced"),
        )
        for i, c in enumerate(cells)
    ]
    values = [
        [(c.get(k) or "no outcome") if k == "outcome" else c.get(k) for k in FACETS] for c in cells
    ]
    lead = el(
        "p",
        f"{len(cells)} cells. Open one for its turns: the prompt, the reply, the artefact taken "
        "from it, what the checker said and the tokens. A link #cell=<cell id> opens that cell.",
    )
    return join(
        [
            lead,
            el("p", "", id="drill-status", class_="note"),
            facets("cells", FACETS, values),
            el("div", *items, id="cells"),
        ]
    )


def sections(run_dir: Path) -> list[PageSection]:
    """report.html's sections for an authoring run, from the run directory."""
    out = run_dir / schema.ANALYSIS_DIR
    doc = md.split((out / schema.REPORT_MD).read_text(encoding="utf-8"))
    plan = RunReader(run_dir).plan
    limits = doc.section("Limitations") or "- The analysis recorded no limitation of this run."
    last = ("Census", "Notes")  # after the other detail, as in report.md
    return [
        PageSection("Question and headline", _headline(out, doc), anchor="question"),
        PageSection("Limitations", md.render(limits), anchor="limitations"),
        PageSection("Conversations, cell by cell", _cells(run_dir, plan), anchor="conversations"),
        *(
            PageSection(t, md.render(b), open=False)
            for t, b in doc.sections
            if not t.startswith((*HEADLINE, "Limitations", *last))
        ),
        *(
            PageSection(t, md.render(doc.section(t) or ""), open=False)
            for t in last
            if doc.section(t)
        ),
    ]


def write(run_dir: Path) -> Path:
    """<run>/analysis/report.html, beside the report.md the authoring analysis wrote."""
    from ...errors import AnalysisError

    try:
        return write_report_html(run_dir, sections(run_dir))
    except OSError as exc:
        raise AnalysisError(
            f"cannot write {run_dir}/{schema.ANALYSIS_DIR}/report.html ({exc.strerror}); check "
            "that the run directory is writable"
        ) from None
