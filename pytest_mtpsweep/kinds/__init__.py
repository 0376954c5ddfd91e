"""The shipped experiment kinds: `decode/`, `load/` and `authoring/`.

Each is a package whose `__init__` declares it (`KIND`, a `kindapi.Kind`) and is named by an
entry point in the group `pytest_mtpsweep.kinds` (pyproject.toml), as a third-party kind's
would be; nothing outside this folder names a kind. Each imports the package through the
front door, the `kindapi` package (docs/architecture/10-front-door.md lists its names), and
`registry.py` finds them. The front door's page, "Adding a kind", is the checklist.
"""
