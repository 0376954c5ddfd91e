"""What a load run's records lack, for the report's Limitations and the terminal (pure): record
lines that could not be read, blocks whose level line is missing, and requests a server
answered without usage, per treatment and level."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from ....kindapi.records import recordlines
from ....kindapi.report import Md

if TYPE_CHECKING:
    import pandas as pd

USAGE = {
    "unknown": "without usage (usage unknown)",
    "malformed": "with usage that cannot be true (malformed)",
}


def usage_counts(requests: pd.DataFrame, status: str) -> list[tuple[str, str, int, int]]:
    """(treatment, level, requests with that usage status, requests) where any has it."""
    out = []
    for (t, level), block in requests.groupby(["treatment", "level"], sort=False):
        n = int((block["usage_status"] == status).sum())
        if n:
            out.append((str(t), str(level), n, len(block)))
    return out


def usage_lines(requests: pd.DataFrame) -> list[str]:
    """The requests a server answered without usage (or with usage that cannot be true), per
    treatment and level: their output tokens are the chunks' count, not the server's."""
    out = []
    for status, said in USAGE.items():
        counts = usage_counts(requests, status)
        if not counts:
            continue
        total = sum(n for _, _, n, _ in counts)
        named = Md.text(", ".join(f"{t}/{level} {n} of {of}" for t, level, n, of in counts))
        out.append(
            f"- {total} request(s) answered {said}: {named}. Their output tokens are counted "
            "from the stream's chunks (one per chunk where no count came), so those blocks' "
            "output tok/s rest on that count rather than the server's."
        )
    return out


def missing_blocks(requests: pd.DataFrame, levels: pd.DataFrame) -> list[str]:
    """Blocks whose request lines were read but whose level line was not (cut short or
    unreadable): their requests count in the latencies, the block in no throughput."""
    have = set(zip(levels["session"], levels["level"], strict=True))
    seen = dict.fromkeys(zip(requests["session"], requests["level"], strict=True))
    lost = [f"{s}/{lv}" for s, lv in seen if (s, lv) not in have]
    if not lost:
        return []
    return [
        f"- {len(lost)} block(s) have request lines but no readable level line ("
        f"{Md.text(', '.join(lost))}): their requests are in the latencies and the per-request "
        "contrasts, but the block is in no throughput, goodput or block count."
    ]


def limitation_lines(
    requests: pd.DataFrame, levels: pd.DataFrame, unreadable: Sequence[str]
) -> list[str]:
    """report.md's Limitations bullets for what the records lack (none when nothing is)."""
    lines = [f"- {recordlines.limitation([Md.text(u) for u in unreadable])}"] if unreadable else []
    return [*lines, *missing_blocks(requests, levels), *usage_lines(requests)]


def terminal_notes(
    requests: pd.DataFrame, levels: pd.DataFrame, unreadable: Sequence[str]
) -> list[str]:
    """What the terminal says beside the headline when lines or usage are missing."""
    out = []
    if unreadable:
        out.append(recordlines.terminal(unreadable))
    out += [x.removeprefix("- ").split(". ")[0] for x in missing_blocks(requests, levels)]
    for status, said in USAGE.items():
        n = sum(c[2] for c in usage_counts(requests, status))
        if n:
            out.append(
                f"{n} request(s) answered {said}: counted per treatment and level in "
                "report.md's Limitations"
            )
    return out
