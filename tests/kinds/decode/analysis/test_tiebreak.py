"""The server-clock bound counts only cells whose interval figure rests on the server's clock."""

from __future__ import annotations

import pandas as pd

from pytest_mtpsweep.kinds.decode.analysis.contrasts import server_clocked
from pytest_mtpsweep.kinds.decode.analysis.runvalues import AnalysisSettings
from pytest_mtpsweep.kinds.decode.analysis.tiebreak import SERVER_CLOCK_AGREE_PP, apply_tiebreak

SETTINGS = AnalysisSettings(baseline="none", tiebreak_pp=1.0)


def contrasts(primary: float, interval: float) -> pd.DataFrame:
    return pd.DataFrame(
        [
            {"treatment": "ngram", "subset": "prose", "endpoint": "primary", "pct_change": primary},
            {
                "treatment": "ngram",
                "subset": "prose",
                "endpoint": "interval",
                "pct_change": interval,
            },
        ]
    )


def published(out: pd.DataFrame) -> pd.Series:
    return out[out["published"]].iloc[0]


GAP = SERVER_CLOCK_AGREE_PP + 5.0  # beyond the bound


def test_a_server_clocked_gap_past_the_bound_publishes_the_client_figure() -> None:
    row = published(apply_tiebreak(contrasts(2.0, 2.0 + GAP), SETTINGS, {"ngram", "none"}))
    assert row["endpoint"] == "primary"
    assert "within which the server's clock" in row["published_reason"]


def test_unknown_basis_counts_as_the_server_clock() -> None:
    row = published(apply_tiebreak(contrasts(2.0, 2.0 + GAP), SETTINGS))
    assert "within which the server's clock" in row["published_reason"]


def test_two_client_clocks_go_to_the_ordinary_tie_break() -> None:
    # Both arms timed by inter-chunk arrival: the gap says nothing about a server's clock.
    row = published(apply_tiebreak(contrasts(2.0, 2.0 + GAP), SETTINGS, set()))
    assert row["endpoint"] == "interval"
    assert "tie-break" in row["published_reason"]
    assert "server's clock" not in row["published_reason"]


def test_the_baseline_on_the_server_clock_makes_the_cell_server_clocked() -> None:
    row = published(apply_tiebreak(contrasts(2.0, 2.0 + GAP), SETTINGS, {"none"}))
    assert row["endpoint"] == "primary"


def test_server_clocked_reads_the_records_basis() -> None:
    records = pd.DataFrame(
        {
            "treatment": ["none", "none", "ngram", "ngram", "old"],
            "interval_basis": ["inter_chunk", "inter_chunk", "inter_chunk", "server_timings", None],
        }
    )
    assert server_clocked(records) == {"ngram", "old"}
    assert server_clocked(records.drop(columns="interval_basis")) == {"none", "ngram", "old"}
