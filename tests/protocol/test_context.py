"""Per-treatment models: which model a session's server loads, what preflight hashes, and a
run whose servers are all attached needs no server binary."""

from __future__ import annotations

from pathlib import Path

from pytest_mtpsweep.interface.registry import prepare
from pytest_mtpsweep.ladder import run_plan
from pytest_mtpsweep.protocol import setup
from pytest_mtpsweep.protocol.loader import load_ladder
from pytest_mtpsweep.rig.provision import ServerBinary
from pytest_mtpsweep.state.context import RunContext
from pytest_mtpsweep.state.rundir import RunDir
from pytest_mtpsweep.wishes.request import RunRequest

REPO = Path(__file__).resolve().parents[2]
LADDER = """
kind = "authoring"
question = "q?"
baseline = "plain"
cohorts = ["plain"]
authoring_dir = "{dir}"
[model]
path = "{default}"
id = "default-model"
[server]
args = ["--draft", "{{model}}"]
[[subjects]]
key = "a"
[[subjects]]
key = "b"
model = "{own}"
model_id = "own-model"
[[subjects]]
key = "c"
base_url = "http://127.0.0.1:9"
served_model = "remote-model"
"""


def ladder(tmp_path: Path) -> Path:
    default, own = tmp_path / "default.gguf", tmp_path / "own.gguf"
    default.write_bytes(b"GGUF")
    own.write_bytes(b"GGUF")
    path = tmp_path / "l.toml"
    path.write_text(LADDER.format(dir=REPO / "experiments" / "authoring", default=default, own=own))
    return path


def test_each_launched_subject_loads_its_own_model(tmp_path: Path) -> None:
    lad = load_ladder(ladder(tmp_path))
    assert lad.model_of("a") == str(tmp_path / "default.gguf")
    assert lad.model_of("b") == str(tmp_path / "own.gguf") and lad.model_of("c") is None
    assert [lad.model_id_of(k) for k in "abc"] == ["default-model", "own-model", "remote-model"]
    assert lad.alias("b") == "own-model-b" and lad.alias("c") == "remote-model"
    models = {"a": tmp_path / "default.gguf", "b": tmp_path / "own.gguf"}
    ctx = RunContext(
        lad, RunDir(tmp_path), "r", ServerBinary(Path("/bin/true"), "test"), "", models["a"],
        {}, "", {}, models=models,
    )  # fmt: skip
    slots = {s.treatment: s for s in run_plan(lad.treatment_keys, 1)}
    argv = ctx.launch_spec(slots["b"], 8080).argv
    assert argv[argv.index("-m") + 1] == str(models["b"])
    assert argv[argv.index("--draft") + 1] == str(models["b"])  # {model} is the session's own
    argv = ctx.launch_spec(slots["a"], 8080).argv
    assert argv[argv.index("-m") + 1] == str(models["a"])
    assert setup.model_files(lad, models, models["a"]) == (models["a"], models["b"])


REMOTE_ONLY = """
kind = "authoring"
question = "q?"
baseline = "plain"
cohorts = ["plain"]
authoring_dir = "{dir}"
[[subjects]]
key = "c"
base_url = "http://127.0.0.1:9"
served_model = "remote-model"
"""


def test_attached_only_needs_no_server_binary_nor_model(tmp_path: Path) -> None:
    path = tmp_path / "r.toml"
    path.write_text(REMOTE_ONLY.format(dir=REPO / "experiments" / "authoring"))
    lad = load_ladder(path)
    req = RunRequest(
        ladder="x", search_dirs=(), cwd=tmp_path, invocation=(), server_bin="/nonexistent"
    )
    res = setup.resolve(lad, prepare(lad, req), req)  # --server-bin is not even looked at
    assert res.server_bin is None and res.models == {} and res.model_path is None
    assert res.keyed["server_build"] == setup.NOT_LAUNCHED
