"""The authoring analysis: cohort B vs cohort A within each subject, paired by task (pass rates
with Newcombe's paired score interval, token ratios with t/bootstrap-t over tasks); subjects
side by side, never pooled unless the ladder asks.

`frame`, `tables`, `contrast` and `report` are pure functions over DataFrames; `io` is the
only edge that reads a run directory and writes the outputs (`analysis.io.analyse_dir`). Nothing
is re-exported here: importing a report module first would otherwise run `io` half-way (an
import cycle through this package's `__init__`).
"""
