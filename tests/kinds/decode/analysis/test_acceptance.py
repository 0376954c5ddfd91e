"""Draft acceptance per treatment and subset."""

from __future__ import annotations

import json
import math

from pytest_mtpsweep.kinds.decode.analysis.acceptance import draft_acceptance
from pytest_mtpsweep.kinds.decode.analysis.frame import parse_records
from pytest_mtpsweep.kinds.decode.analysis.runvalues import RecordFile
from tests.strategies import Design, make_records

DESIGN = Design(treatments=("none", "gate"))


def test_sums_drafted_and_accepted_tokens_of_valid_records() -> None:
    recs = make_records(DESIGN, lambda *a: 10.0)
    for r in recs:
        if r["treatment"] == "gate":
            r.update(draft_n=10, draft_n_accepted=7 if r["subset"] == "prose" else 9)
    recs[-1].update(valid=False, draft_n=1000, draft_n_accepted=0)  # an invalid one never counts
    assert recs[-1]["treatment"] == "none"
    files = [RecordFile("run-1", "all", tuple(json.dumps(r) for r in recs))]
    table = draft_acceptance(parse_records(files, session_facts={}, plan_keyed={})[0])
    rows = {(t, s): row for t, s, *row in table.itertuples(index=False)}
    assert rows[("gate", "prose")][:4] == [6, 6, 60, 42]
    assert rows[("gate", "prose")][4] == 70.0
    assert rows[("gate", "structured")][4] == 90.0
    assert rows[("gate", "pooled")][2:5] == [120, 96, 80.0]
    none = rows[("none", "pooled")]
    assert none[1] == 0 and math.isnan(none[4])  # no drafter ran: missing, not zero
