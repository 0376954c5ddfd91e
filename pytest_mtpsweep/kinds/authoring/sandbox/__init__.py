"""The checker's boundary: the grader runs a task's checker, the candidate runs the artefact,
each in its own jail (`run.py` starts and judges them; `jail.py`, `views.py`, `grader.py`,
`candidate.py`, `proxy.py`, `wire.py` are the parts; ARCHITECTURE.md, "authoring")."""

from .run import JAIL, Check, judge, probe, run_check, scrubbed_env

__all__ = ["JAIL", "Check", "judge", "probe", "run_check", "scrubbed_env"]
