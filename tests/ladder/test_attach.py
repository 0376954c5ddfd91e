"""A treatment's attach fields and `--base-url`, as the ladder loader reads them."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from pytest_mtpsweep.base.errors import LadderError, OptionError
from pytest_mtpsweep.ladder.attachfields import one_server
from pytest_mtpsweep.protocol.loader import load_ladder

HEAD = """
question = "Is B faster than A?"
baseline = "a"
[model]
id = "m"
[server]
port = 0
[[treatments]]
key = "a"
{a}
[[treatments]]
key = "b"
{b}
"""


def ladder(tmp_path: Path, a: str = "", b: str = "") -> Path:
    p = tmp_path / "l.toml"
    p.write_text(HEAD.format(a=a, b=b))
    return p


def test_every_attach_field_is_read(tmp_path: Path) -> None:
    a = (
        'base_url = "http://gpu-box:8000/v1/"\napi_key_env = "VLLM_KEY"\n'
        'flags_command = ["ssh", "gpu-box", "cat /run/vllm.argv"]\nready_url = "/health"\n'
        "metrics = true"
    )
    lad = load_ladder(ladder(tmp_path, a, 'base_url = "https://h:1"\nflags_file = "f.txt"'))
    ta, tb = lad.treatments
    assert ta.base_url == "http://gpu-box:8000" and ta.api_key_env == "VLLM_KEY"
    assert ta.flags_command == ("ssh", "gpu-box", "cat /run/vllm.argv")
    assert ta.ready_url == "/health" and ta.metrics is True
    assert tb.flags_file == (tmp_path / "f.txt").resolve() and tb.metrics is None


@pytest.mark.parametrize(
    ("a", "message"),
    [
        ('flags_command = ["x"]', "applies to an attached server only; add treatments[0].base_url"),
        (
            'base_url = "http://h:1"\nflags_file = "f"\nflags_command = ["x"]',
            "both say where the server's argv comes from",
        ),
        ('base_url = "http://h:1"\nflags_command = []', "flags_command is empty"),
        ('base_url = "http://h:1"\nflags_command = "cat f"', "must be a list"),
        ('base_url = "http://h:1"\nready_url = "health"', "neither a path like /health"),
        ('base_url = "http://h:1"\nmetrics = "yes"', "must be a bool"),
    ],
)
def test_bad_attach_fields_are_one_line_errors(tmp_path: Path, a: str, message: str) -> None:
    with pytest.raises(LadderError, match=message.replace("[", r"\[").replace("(", r"\(")):
        load_ladder(ladder(tmp_path, a))


def test_base_url_attaches_every_treatment_and_strips_v1(tmp_path: Path) -> None:
    lad = load_ladder(ladder(tmp_path), base_url="http://127.0.0.1:8197/v1")
    assert [t.base_url for t in lad.treatments] == ["http://127.0.0.1:8197"] * 2
    assert all(t.attached for t in lad.treatments)
    # attach fields are allowed once --base-url supplies the address
    lad = load_ladder(ladder(tmp_path, "metrics = false"), base_url="http://h:1")
    assert lad.treatments[0].metrics is False


def test_base_url_refuses_a_ladder_with_its_own_and_a_non_url(tmp_path: Path) -> None:
    with pytest.raises(OptionError, match=r"whose treatments \['b'\] have their own base_url"):
        load_ladder(ladder(tmp_path, b='base_url = "http://h:2"'), base_url="http://h:1")
    with pytest.raises(OptionError, match="is not an http"):
        load_ladder(ladder(tmp_path), base_url="127.0.0.1:8000")


def test_one_server_measures_one_treatment() -> None:
    one_server("http://h:1", ["b"])
    with pytest.raises(OptionError, match=r"span treatments a, b; select .* -k c1-a"):
        one_server("http://h:1", ["a", "b"])


def attach_snippets() -> list[str]:
    text = (Path(__file__).resolve().parents[2] / "docs" / "attach.md").read_text()
    return re.findall(r"^```toml\n(.*?)^```", text, flags=re.S | re.M)


def test_the_attach_page_snippets_load_as_written(tmp_path: Path) -> None:
    snippets = attach_snippets()
    assert len(snippets) == 3  # vLLM, SGLang, llama-server in a container
    for i, text in enumerate(snippets):
        path = tmp_path / f"s{i}.toml"
        path.write_text(text)
        lad = load_ladder(path)
        assert all(t.attached for t in lad.treatments) and len(lad.treatments) == 2
