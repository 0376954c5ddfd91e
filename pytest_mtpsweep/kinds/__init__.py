"""The shipped experiment kinds: `decode/` and `authoring/`.

Each is a package whose `__init__` declares it (`KIND`, a `kindapi.Kind`) and is named by an
entry point in the group `pytest_mtpsweep.kinds` (pyproject.toml), as a third-party kind's
would be; nothing outside this folder names a kind. The interface they implement is
`kindapi.py`; `registry.py` finds them. ARCHITECTURE.md, "Adding a kind", is the checklist.
"""
