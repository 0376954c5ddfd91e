"""The run protocol, the same for every experiment kind: run directory, pre-registration,
schedule (resume, curtailment), sessions (warm-up, calibration, quarantine, re-runs),
witnesses, the row table."""
