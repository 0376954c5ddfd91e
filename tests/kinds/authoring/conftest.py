"""The authoring tests' remote subject: a STUB OpenAI server (tests/stub_openai_server.py)
playing the scripted model of `project.py`, behind an API key that must never be recorded."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.kinds.authoring.project import KEY, KEY_ENV, scripted
from tests.stub_openai_server import Script, serve


@pytest.fixture
def key(monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setenv(KEY_ENV, KEY)
    return KEY


@pytest.fixture
def stub(key: str) -> Iterator[tuple[Script, str]]:
    script = Script(reply=scripted, key=key)
    with serve(script) as url:
        yield script, url
