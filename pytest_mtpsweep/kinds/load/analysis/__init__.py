"""The load kind's analysis: at session end, at a stop rule's looks and `mtpsweep analyse` of
its run directories. `compute.py` is the analysis as a result (it writes nothing) and
`analyse` saves it; `atend.py` runs it inside a run (a [stop] look, session end);
`commands.py` holds the kind's `analyse` command; the rest are the pure parts."""
