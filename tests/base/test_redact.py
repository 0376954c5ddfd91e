"""A URL's user-info (`http://user:SECRET@host`) is used for requests but never printed or
written: not in preflight's rows, the terminal, the session records, the plan, the
pre-registration or the report; and `redact_url` itself, case by case."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_mtpsweep.base.redact import redact_url
from pytest_mtpsweep.cli.main import main
from tests.protocol.test_attach import flags, project, run
from tests.sandbox import only_run
from tests.stub_vllm_server import Script, serve

SECRET = "hunter2SECRET"


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        ("http://alice:pw@127.0.0.1:8000/v1", "http://alice:***@127.0.0.1:8000/v1"),
        ("https://token@host", "https://***@host"),  # a user alone is often a token
        ("http://:pw@host", "http://***@host"),
        ("http://u:p@ss/w?x#y@host:2/p", "http://u:***@host:2/p"),  # '@', '/', '#' in it
        ("--base-url=http://u:pw@h:1", "--base-url=http://u:***@h:1"),
        ("'http://u:pw@h' and http://v:pw2@k", "'http://u:***@h' and http://v:***@k"),
        ("u:pw@host:80", "u:***@host:80"),  # typed without a scheme
        ("http://127.0.0.1:8000/v1", "http://127.0.0.1:8000/v1"),
        ("mail me@example.org", "mail me@example.org"),
        ("http://host/v1/@me", "http://host/v1/@me"),
        # round six (issue 50): a token outside the user:pass@ form
        ("https://gl.com/a.git?private_token=T0K", "https://gl.com/a.git?private_token=***"),
        ("git+https://T0K@github.com/a/b", "git+https://***@github.com/a/b"),
        ("'https://h/a?x=1&flag#T0K'", "'https://h/a?x=***&***#***'"),
        ("https://h/a?private_token=T0K/: 404", "https://h/a?private_token=*** 404"),
    ],
)
def test_redact_url(text: str, shown: str) -> None:
    assert redact_url(text) == shown and redact_url(shown) == shown


def leaks(root: Path) -> list[str]:
    """Every file under `root` that holds SECRET (read as bytes: any file counts)."""
    return [str(p) for p in root.rglob("*") if p.is_file() and SECRET.encode() in p.read_bytes()]


def test_an_attached_run_writes_and_prints_no_password(pytester: pytest.Pytester) -> None:
    script = Script()
    with serve(script) as url:
        secret_url = url.replace("http://", f"http://alice:{SECRET}@")
        few = project(pytester, spec=flags("vllm serve m --speculative-config {}"))
        result = run(pytester, few, f"--base-url={secret_url}/v1", "-k", "c1-spec")
    result.assert_outcomes(passed=3, deselected=3)  # the URL, user-info and all, was used
    out = result.stdout.str() + result.stderr.str()
    assert SECRET not in out
    rd = only_run(pytester.path)
    assert leaks(rd) == []
    assert f"--base-url=http://alice:***@127.0.0.1:{url.rsplit(':', 1)[1]}/v1" in (
        (rd / "preregistration.md").read_text()
    )


def test_an_unreachable_endpoint_is_refused_without_its_password(
    pytester: pytest.Pytester, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = f"http://alice:{SECRET}@127.0.0.1:9"  # port 9: nothing listens
    few = project(pytester, none=f'base_url = "{bad}"', spec=f'base_url = "{bad}"')
    result = run(pytester, few, "-k", "c1-spec")
    assert result.ret != 0
    out = result.stdout.str() + result.stderr.str()
    assert "Start the server at http://alice:***@127.0.0.1:9 before the run" in out
    assert SECRET not in out
    ladder = pytester.path / "experiments" / "ladders" / "vllm.toml"
    assert [p for p in leaks(pytester.path) if p != str(ladder)] == []
    # the command line's preflight and lint say the same without it
    assert main(["preflight", "--ladder", str(ladder)]) != 0
    assert main(["preflight", "--ladder", str(ladder), f"--base-url={bad}x"]) != 0
    ladder.write_text(ladder.read_text().replace(":9", ":abc"))
    assert main(["lint", str(ladder)]) != 0
    out, err = capsys.readouterr()
    assert "alice:***@127.0.0.1" in out + err and SECRET not in out + err
