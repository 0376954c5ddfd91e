"""The experiments' conftest: pytest-mtpsweep supplies the fixtures; add your own here."""
