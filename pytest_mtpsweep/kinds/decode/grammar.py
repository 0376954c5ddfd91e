"""What decode's `--expect` gates may say, and the grammar `mtpsweep calibrate` reads its
`--margin` by. Its own module, not the declaration's, because the declaration names
`calibrate.py`; as light as the declaration, which every pytest process imports."""

from __future__ import annotations

from ...kindapi import SUBSETS, GateGrammar

GATES = GateGrammar(
    syntax=f"TREATMENT:SUBSET:faster|slower|equivalent or TREATMENT:SUBSET:{GateGrammar.WORD}:M",
    example="gate_0.10:structured:faster",
    rules=GateGrammar.DIRECTIONS,
    cells=(*SUBSETS.names, SUBSETS.pooled),
    cell_word="subset",
)
