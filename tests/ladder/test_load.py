"""Ladder loading, validation and the counterbalanced run plan."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from pytest_mtpsweep.base.errors import LadderError
from pytest_mtpsweep.protocol.loader import load_ladder

REPO = Path(__file__).resolve().parents[2]
LADDERS = REPO / "experiments" / "ladders"

MINIMAL = """
question = "Is B faster than A?"
baseline = "a"
[model]
path = "m.gguf"
id = "m"
[server]
port = 0
[[treatments]]
key = "a"
[[treatments]]
key = "b"
args = ["--spec-type", "ngram-simple"]
"""


def write(tmp_path: Path, text: str) -> Path:
    p = tmp_path / "l.toml"
    p.write_text(text)
    return p


class TestShippedLadders:
    @pytest.mark.parametrize("name", ["drafters-cpu", "lowerarm", "lowerarm-cpu"])
    def test_loads(self, name: str) -> None:
        lad = load_ladder(LADDERS / f"{name}.toml")
        assert lad.name == name
        assert lad.baseline == lad.treatments[0].key == "none"
        # the demo runs 4 cycles (its interval carries the session level); the lowerarm
        # ladders keep the users' 2 (their intervals are conditional on the sessions run)
        assert lad.cycles == (4 if name == "drafters-cpu" else 2)
        assert lad.seed == 42 and lad.temperature == 0.0

    def test_cpu_demo_is_the_demo(self) -> None:
        lad = load_ladder(LADDERS / "drafters-cpu.toml")
        assert [t.key for t in lad.treatments] == ["none", "ngram-simple", "ngram-mod"]
        assert lad.max_tokens == 64 and lad.model == "embedded:qwen2.5-coder-0.5b"

    def test_lowerarm_gates(self) -> None:
        lad = load_ladder(LADDERS / "lowerarm.toml")
        assert lad.ctx_size == 65536 and lad.max_tokens == 256 and lad.model == ""
        assert lad.treatment("gate_0.10").args == (
            "--spec-type",
            "draft-mtp",
            "--spec-draft-n-max",
            "6",
            "--spec-draft-p-min",
            "0.10",
        )

    def test_lowerarm_cpu_drafts_with_its_own_model(self) -> None:
        lad = load_ladder(LADDERS / "lowerarm-cpu.toml")
        args = lad.treatment("gate_0.25").args
        assert args[args.index("-md") + 1] == "{model}"
        assert "draft-simple" in args and "0.25" in args


class TestValidation:
    def test_minimal_defaults(self, tmp_path: Path) -> None:
        lad = load_ladder(write(tmp_path, MINIMAL))
        assert lad.name == "l" and lad.port == 0 and lad.host == "127.0.0.1"
        assert lad.treatment("b").args == ("--spec-type", "ngram-simple")

    @pytest.mark.parametrize(
        ("edit", "needle"),
        [
            (
                lambda s: s.replace('question = "Is B faster than A?"', ""),
                "missing required field 'question'",
            ),
            (lambda s: s.replace('baseline = "a"', 'baseline = "z"'), "field 'baseline' is 'z'"),
            (lambda s: "bogus = 1\n" + s, "unknown field 'bogus'"),
            (lambda s: s + "\nbogus = 1\n", "unknown field treatments[1].'bogus'"),
            (lambda s: s.replace("port = 0", 'port = "80"'), "field server.'port'"),
            (lambda s: s.replace("port = 0", "port = 70000"), "server.port is 70000"),
            (lambda s: s.replace('key = "b"', 'key = "a"'), "appear twice"),
            (lambda s: s.replace('key = "b"', 'key = "b c"'), "letters, digits"),
            (
                lambda s: s.replace('args = ["--spec-type", "ngram-simple"]', "args = [1]"),
                "list of strings",
            ),
            (lambda s: "cycles = 0\n" + s, "cycles is 0"),
            (lambda s: "cycles = true\n" + s, "must be a int"),
            (lambda s: s + "\n[[treatments]\n", "not valid TOML"),
        ],
    )
    def test_errors_name_file_field_and_fix(self, tmp_path: Path, edit, needle: str) -> None:  # type: ignore[no-untyped-def]
        path = write(tmp_path, edit(MINIMAL))
        with pytest.raises(LadderError) as info:
            load_ladder(path)
        msg = str(info.value)
        assert str(path) in msg and needle in msg
        assert "\n" not in msg.strip()

    def test_missing_file(self, tmp_path: Path) -> None:
        with pytest.raises(LadderError, match="not found"):
            load_ladder(tmp_path / "nope.toml")


class TestKindsAndOverrides:
    def test_a_decode_ladder_needs_two_treatments(self, tmp_path: Path) -> None:
        text = MINIMAL.replace(
            '[[treatments]]\nkey = "b"\nargs = ["--spec-type", "ngram-simple"]\n', ""
        )
        with pytest.raises(LadderError, match="at least two"):
            load_ladder(write(tmp_path, text))

    def test_unknown_kind(self, tmp_path: Path) -> None:
        with pytest.raises(LadderError, match="field 'kind' is 'poetry'"):
            load_ladder(write(tmp_path, 'kind = "poetry"\n' + MINIMAL))

    def test_overrides_are_validated_and_named(self, tmp_path: Path) -> None:
        path = write(tmp_path, MINIMAL)
        assert load_ladder(path, {"cycles": 4, "server.port": 9}).cycles == 4
        with pytest.raises(LadderError) as info:
            load_ladder(path, {"cycles": 0})
        assert "from the command line" in str(info.value) and "cycles is 0" in str(info.value)

    @pytest.mark.parametrize("value", [float("inf"), float("nan")])
    def test_floats_must_be_finite(self, tmp_path: Path, value: float) -> None:
        with pytest.raises(LadderError, match="finite"):
            load_ladder(write(tmp_path, MINIMAL), {"temperature": value})

    def test_non_utf8_ladder_is_one_line(self, tmp_path: Path) -> None:
        path = tmp_path / "l.toml"
        path.write_bytes(MINIMAL.encode() + b"# caf\xe9\n")
        with pytest.raises(LadderError, match="not UTF-8"):
            load_ladder(path)

    def test_a_directory_is_one_line(self, tmp_path: Path) -> None:
        with pytest.raises(LadderError, match="is a directory"):
            load_ladder(tmp_path)

    def test_a_binary_ladder_or_a_symlink_loop_is_one_line(self, tmp_path: Path) -> None:
        binary = tmp_path / "b.toml"
        binary.write_bytes(b"\x00\x01\xff\xfe" * 8)
        loop = tmp_path / "loop.toml"
        loop.symlink_to(loop)
        for path, needle in ((binary, "not UTF-8"), (loop, "cannot be read")):
            with pytest.raises(LadderError, match=needle) as info:
                load_ladder(path)
            assert "\n" not in str(info.value)

    def test_a_fifo_a_device_a_huge_or_deep_ladder_is_one_line_never_a_hang(
        self, tmp_path: Path
    ) -> None:
        fifo = tmp_path / "fifo.toml"
        os.mkfifo(fifo)  # read_bytes() waited here for a writer for ever
        huge = tmp_path / "huge.toml"
        with huge.open("wb") as f:
            f.truncate(2 * 1024 * 1024)
        deep = write(tmp_path, MINIMAL + "x = " + "[" * 5000 + "]" * 5000 + "\n")
        cases = (
            (fifo, "is a FIFO, not a regular file"),
            (Path("/dev/zero"), "is a device, not a regular file"),
            (huge, "over the 1048576 a read takes"),
            (deep, "nests arrays or tables thousands deep"),
        )
        for path, needle in cases:
            with pytest.raises(LadderError, match=needle) as info:
                load_ladder(path)
            assert str(path) in str(info.value) and "\n" not in str(info.value)

    @pytest.mark.parametrize("contrast", ['"b vs z"', '"b versus a"', '"a vs a"', '"b vs a vs a"'])
    def test_a_contrast_names_two_treatments(self, tmp_path: Path, contrast: str) -> None:
        text = MINIMAL + f"[preregistration]\nsecondary_contrasts = [{contrast}]\n"
        with pytest.raises(LadderError, match="is not 'TREATMENT vs BASELINE'"):
            load_ladder(write(tmp_path, text))

    def test_a_ladder_reads_its_contrast(self, tmp_path: Path) -> None:
        lad = load_ladder(write(tmp_path, MINIMAL))
        assert lad.contrast(" b vs a ") == ("b", "a")
        with pytest.raises(LadderError, match=r"^.*l\.toml: contrast 'a vs a' in \[pre"):
            lad.contrast("a vs a")
        with pytest.raises(LadderError, match=r"^elsewhere: contrast 'b vs z' .* of a, b; "):
            lad.contrast("b vs z", "elsewhere")

    def test_the_scope_is_one_line(self, tmp_path: Path) -> None:
        ok = MINIMAL + '[preregistration]\nscope = "  Bounds the gain; no knee.  "\n'
        assert load_ladder(write(tmp_path, ok)).prereg.scope == "Bounds the gain; no knee."
        assert load_ladder(write(tmp_path, MINIMAL)).prereg.scope == ""
        two = MINIMAL + '[preregistration]\nscope = """\nBounds the gain.\nNo knee.\n"""\n'
        with pytest.raises(LadderError, match=r"preregistration\.scope spans several lines"):
            load_ladder(write(tmp_path, two))
        with pytest.raises(LadderError, match=r"scope"):
            load_ladder(write(tmp_path, MINIMAL + "[preregistration]\nscope = 3\n"))

    def test_preflight_ports_are_listed_ports(self, tmp_path: Path) -> None:
        lad = load_ladder(write(tmp_path, MINIMAL + "[preflight]\nports = [8099, 8100]\n"))
        assert lad.preflight.ports == (8099, 8100)
        for bad in ("[0]", "[70000]", '["8099"]', "[true]"):
            with pytest.raises(LadderError, match=r"preflight\.ports holds"):
                load_ladder(write(tmp_path, MINIMAL + f"[preflight]\nports = {bad}\n"))

    @pytest.mark.parametrize(
        ("table", "needle"),
        [
            ('[analysis]\nprimary_endpoint = "speed"\n', "primary_endpoint"),
            ("[analysis]\nmargin_pct = -5\n", "margin_pct"),
            # issue 50: a margin of 1e308 called a +86 % cell "equivalent"
            ("[analysis]\nmargin_pct = 1e308\n", r"margin_pct is 1e\+308; use a positive margin"),
            ("[analysis]\ntiebreak_pp = 1000\n", "tiebreak_pp is 1000"),
        ],
    )
    def test_analysis_settings_fail_before_the_run(
        self, tmp_path: Path, table: str, needle: str
    ) -> None:
        with pytest.raises(LadderError, match=needle):
            load_ladder(write(tmp_path, MINIMAL + table))


class TestCpus:
    def test_cpu_lists_parse(self) -> None:
        from pytest_mtpsweep.ladder.fields import parse_cpus

        assert parse_cpus("0-2,5") == {0, 1, 2, 5} and parse_cpus("1") == {1}
        with pytest.raises(ValueError):
            parse_cpus("a-b")

    def test_server_cpus_must_be_ours_to_use(self, tmp_path: Path) -> None:
        lad = load_ladder(write(tmp_path, MINIMAL), {"server.cpus": "0"})
        assert lad.cpus == frozenset({0})
        with pytest.raises(LadderError, match="this process may not use"):
            load_ladder(write(tmp_path, MINIMAL), {"server.cpus": "0-4095"})
        with pytest.raises(LadderError, match="not a CPU list"):
            load_ladder(write(tmp_path, MINIMAL), {"server.cpus": "zero"})


class TestMeasurementTimeout:
    def test_the_gpu_ladder_carries_the_seeds_alarm(self) -> None:
        assert load_ladder(LADDERS / "lowerarm.toml").measurement_timeout_s == 600.0
        assert load_ladder(LADDERS / "drafters-cpu.toml").measurement_timeout_s is None

    @pytest.mark.parametrize("value", ["0", "-5", '"10m"'])
    def test_a_bad_value_names_the_field(self, tmp_path: Path, value: str) -> None:
        path = write(tmp_path, f"measurement_timeout_s = {value}\n{MINIMAL}")
        with pytest.raises(LadderError, match="measurement_timeout_s"):
            load_ladder(path)
