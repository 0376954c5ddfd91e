"""The decode kind's analysis: at session end, `mtpsweep analyse` and `mtpsweep compare` of its
run directories. The one entry is `io.analyse_run(run_dirs, AnalyseOptions(...))`: the outputs,
and report.md and report.html from one report model (`report.report_model`).

The package's modules: `io.py` is the only edge (reads a run through the run reader, writes the
outputs); `pipeline.py` is the whole analysis as one pure function over the rest; `request.py`
checks the options before a run, `atend.py` analyses inside one (session end, a [stop] look),
`verdicts.py` judges the gates, `commands.py` holds the kind's `analyse` and `compare`."""
