"""The authoring report's "Conversations, cell by cell": every cell turn by turn, for the page.

Built from what the analysis already read: each cell's last record, its turns, the messages of
its conversation file and the cohorts' extraction mode (plan.json). Each cell is a collapsed
element `#cell-<cell id>`, filterable by subject, cohort, task and outcome; the fragment
`#cell=<cell id>` opens it. Replies, artefacts and checker output go through the escaping
builder, so they are text on the page. Pure: `io.py` reads the run.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping, Sequence
from typing import Any
from urllib.parse import quote

from ....kindapi.records import PlanDoc
from ....kindapi.report import Markup, Page, Section
from .. import records
from ..run.extract import extract

TITLE = "Conversations, cell by cell"
ANCHOR = "conversations"
FACETS = ("subject", "cohort", "task", records.OUTCOME)
Messages = list[dict[str, Any]]


def final_cells(records: Iterable[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """Each cell's last record (a --resume writes a later attempt after an earlier one)."""
    last: dict[str, Mapping[str, Any]] = {}
    for record in records:
        last[str(record.get("cell"))] = record
    return list(last.values())


def _by_cell(
    turns: Iterable[Mapping[str, Any]],
) -> dict[tuple[str, Any], list[Mapping[str, Any]]]:
    out: dict[tuple[str, Any], list[Mapping[str, Any]]] = {}
    for record in turns:
        out.setdefault((str(record.get("cell")), record.get("attempt")), []).append(record)
    return {k: sorted(v, key=lambda t: int(t.get("turn") or 0)) for k, v in out.items()}


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
    return Markup.el("span", name, class_=f"badge {name.replace(' ', '_')}")


def _artefact(reply: str | None, mode: str, turn: Mapping[str, Any]) -> Markup:
    digest = turn.get("artefact_sha256")
    if not digest:
        return Markup.el("p", "No artefact was extracted from this reply.", class_="note")
    found = extract(reply, mode) if reply is not None else None
    if found is None or hashlib.sha256(found.encode("utf-8")).hexdigest() != digest:
        return Markup.el(
            "p",
            f"The artefact (sha256 {digest}) is not re-extracted from the reply "
            f"by {mode!r} today; the record keeps its digest only.",
            class_="note",
        )
    return Markup.concat(
        [
            Markup.el(
                "p",
                f"Extracted artefact ({mode}; its sha256 matches the turn record):",
                class_="label",
            ),
            Markup.el("pre", found),
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
        Markup.el(
            "p",
            "Checker: ",
            _badge(turn.get("verdict")),
            " " + "; ".join(facts[1:]),
            class_="label",
        )
    ]
    if turn.get("error_first_line"):
        parts.append(Markup.el("pre", str(turn["error_first_line"])))
    return Markup.concat(parts)


def _tokens(record: Mapping[str, Any], prompt: str, completion: str) -> str:
    """'185 prompt + 30 completion tokens'; a count the server did not give is 'unknown'."""
    p, c = record.get(records.PROMPT_TOKENS), record.get(records.COMPLETION_TOKENS)
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
    body = [
        Markup.el("h4", *head),
        Markup.el("p", "Prompt:", class_="label"),
        Markup.el("pre", sent),
    ]
    if reply is None:
        why = str(turn.get("api_error") or "no reply came back")
        status = turn.get("http_status")
        if status is not None and str(status) not in why:
            why += f" (HTTP {status})"
        body.append(Markup.el("p", f"No reply: {why}.", class_="note"))
    else:
        body += [
            Markup.el("p", "Reply:", class_="label"),
            Markup.el("pre", reply),
            _artefact(reply, mode, turn),
        ]
        body.append(_checker(turn))
    return Markup.el("div", *body, class_="turn")


def _cell(
    i: int,
    cell: Mapping[str, Any],
    turns: Sequence[Mapping[str, Any]],
    messages: Messages | None,
    mode: str,
) -> Markup:
    name = str(cell.get("cell"))
    summary = Markup.el(
        "summary",
        Markup.el("code", name),
        f" {cell.get('subject')} · {cell.get('cohort')} · {cell.get('task')} · "
        f"r{cell.get('repeat')} ",
        _badge(cell.get(records.OUTCOME)),
        f" {cell.get('turns_used') or 0} turn(s), {_tokens(cell, '', ' tokens')} ",
        Markup.el("a", "link", href=f"#cell={quote(name, safe='')}", class_="permalink"),
    )
    facts = [
        f"{k.replace('_', ' ')}: {cell[k]}"
        for k in ("reason", "api_error", "checker_error", "green_turn", "sampling_seed", "attempt")
        if cell.get(k) not in (None, "")
    ]
    body: list[Markup] = [Markup.el("p", "; ".join(facts), class_="note")] if facts else []
    if messages is None and not cell.get("conversation"):
        body.append(
            Markup.el("p", "No conversation was held: the cell never started.", class_="note")
        )
    elif messages is None:
        body.append(
            Markup.el("p", f"No conversation file: {cell.get('conversation')}.", class_="note")
        )
    else:
        exchanges = _exchanges(messages)
        for k, turn in enumerate(turns):
            sent, reply = (
                exchanges[k] if k < len(exchanges) else ("(not in the conversation)", None)
            )
            body.append(_turn(turn, sent, reply, mode))
        if len(exchanges) > len(turns):
            body += [
                Markup.el("p", "Prepared, never sent (the cell ended first):", class_="label"),
                Markup.el("pre", exchanges[-1][0]),
            ]
    return Markup.el("details", summary, *body, class_="cell", id=f"cell-{name}", data_i=i)


def section(
    cells: Sequence[Mapping[str, Any]],
    turns: Iterable[Mapping[str, Any]],
    messages: Mapping[str, Messages | None],
    plan: PlanDoc,
) -> Section:
    """The page's section of every cell (report.md's census points to it): `cells` are the
    final records, `messages` each cell's conversation by cell id (None: none to show)."""
    modes = {
        str(c.get("name")): str(c.get("extract") or "fenced")
        for c in plan.kind_fields.get("cohorts", [])
        if isinstance(c, dict)
    }
    held = _by_cell(turns)
    items = [
        _cell(
            i,
            c,
            held.get((str(c.get("cell")), c.get("attempt")), []),
            messages.get(str(c.get("cell"))),
            modes.get(str(c.get("cohort")), "fenced"),
        )
        for i, c in enumerate(cells)
    ]
    values = [
        [(c.get(k) or "no outcome") if k == records.OUTCOME else c.get(k) for k in FACETS]
        for c in cells
    ]
    lead = Markup.el(
        "p",
        f"{len(cells)} cells. Open one for its turns: the prompt, the reply, the artefact taken "
        "from it, what the checker said and the tokens. A link #cell=<cell id> opens that cell.",
    )
    markup = Markup.concat(
        [
            lead,
            Markup.el("p", "", id="drill-status", class_="note"),
            Markup.facets("cells", FACETS, values),
            Markup.el("div", *items, id="cells"),
        ]
    )
    return Section(TITLE, (Page(markup),), anchor=ANCHOR, markdown=False, open=True)
