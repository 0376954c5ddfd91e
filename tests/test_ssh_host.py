"""A real second host: an OpenSSH server the test starts on a port of 127.0.0.1 (Debian's
openssh-server, a generated host key and user key, no password), and pytest-xdist's
`--tx ssh=...` gateway with `--rsyncdir`: a small CPU ladder over a local worker and the
"remote" one, records from both, pairs within each, one analysis on the controller.

What a host needs, as this test sets it up (docs/distribution.md says the same): sshd that
accepts the controller's key; the same Python environment with pytest-mtpsweep, pytest-xdist,
llama-server and the model installed (`python=` in the spec names its interpreter); and the run
directory on a filesystem both hosts see at the same path (workers append their records there).
"""

from __future__ import annotations

import getpass
import json
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from pytest_mtpsweep.rig.net import free_port
from tests.protocol.test_session import all_records
from tests.runner.test_distribute import CPU_SLICE
from tests.sandbox import copy_experiments, only_run, prompt_dir, servers_of

SSHD = Path("/usr/sbin/sshd")
pytestmark = pytest.mark.skipif(
    not SSHD.exists() or not shutil.which("ssh") or not shutil.which("ssh-keygen"),
    reason="needs openssh-server and the ssh client (scripts/dev test installs them)",
)

SSHD_CONFIG = """
Port {port}
ListenAddress 127.0.0.1
HostKey {d}/host_ed25519
PidFile {d}/sshd.pid
AuthorizedKeysFile {d}/authorized_keys
PubkeyAuthentication yes
PasswordAuthentication no
KbdInteractiveAuthentication no
PermitRootLogin prohibit-password
StrictModes no
UsePAM no
"""
SSH_CONFIG = """
Host mtpsweep-loopback
  HostName 127.0.0.1
  Port {port}
  User {user}
  IdentityFile {d}/id_ed25519
  IdentitiesOnly yes
  StrictHostKeyChecking no
  UserKnownHostsFile /dev/null
  BatchMode yes
  LogLevel ERROR
"""


@pytest.fixture
def host(tmp_path: Path) -> Iterator[Path]:
    """A loopback SSH server for this user; the client's ssh_config file to reach it."""
    d = tmp_path / "ssh"
    d.mkdir(mode=0o700)
    for name in ("host_ed25519", "id_ed25519"):
        subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(d / name)],
                       check=True)  # fmt: skip
    shutil.copy(d / "id_ed25519.pub", d / "authorized_keys")
    port = free_port("127.0.0.1")
    (d / "sshd_config").write_text(SSHD_CONFIG.format(port=port, d=d))
    (d / "ssh_config").write_text(SSH_CONFIG.format(port=port, d=d, user=getpass.getuser()))
    Path("/run/sshd").mkdir(exist_ok=True)  # sshd's privilege-separation directory
    proc = subprocess.Popen([str(SSHD), "-D", "-e", "-f", str(d / "sshd_config")],
                            stderr=(d / "sshd.log").open("wb"))  # fmt: skip
    try:
        cmd = ["ssh", "-F", str(d / "ssh_config"), "mtpsweep-loopback", "true"]
        deadline = time.monotonic() + 30
        while subprocess.run(cmd, capture_output=True, check=False).returncode != 0:
            assert proc.poll() is None and time.monotonic() < deadline, (d / "sshd.log").read_text()
            time.sleep(0.3)
        yield d / "ssh_config"
    finally:
        proc.terminate()
        proc.wait(timeout=30)


@pytest.mark.server
def test_a_ladder_over_a_local_worker_and_one_over_ssh(
    pytester: pytest.Pytester, host: Path, server_bin: Path, machinery_model: Path
) -> None:
    copy_experiments(pytester, {"slice": CPU_SLICE})
    few = prompt_dir(pytester, ["prose_01", "structured_01"])
    remote = pytester.path / "remote-host"
    remote.mkdir()
    # the suite's host rule is off (tests/conftest.py); an ssh worker starts with a fresh
    # environment, so it is told too: the local worker beside it is no busy host to refuse
    ssh = (
        f"ssh=mtpsweep-loopback//ssh_config={host}//python={sys.executable}//chdir={remote}"
        "//env:MTPSWEEP_HOST_RULE=off"
    )
    # xdist maps the test path onto the rsync root only when both are absolute
    experiments = str(pytester.path / "experiments")
    result = pytester.runpytest(
        experiments, "--ladder=slice", f"--prompts-dir={few}", "--boot=1000",
        "--dist", "load", "--tx", "popen", "--tx", ssh, "--rsyncdir", experiments,
        "-W", "ignore::DeprecationWarning",
    )  # fmt: skip
    out = result.stdout.str()
    print(out[:3000])
    result.assert_outcomes(passed=16)
    assert (remote / "experiments" / "conftest.py").is_file()  # rsynced to the "host"
    run = only_run(pytester.path)
    sessions = [json.loads(p.read_text()) for p in sorted((run / "sessions").glob("*.json"))]
    assert {s["worker"] for s in sessions} == {"gw0", "gw1"}
    records = all_records(run)
    assert {r["worker"] for r in records} == {"gw0", "gw1"} and all(r["valid"] for r in records)
    # each block on one worker: its pairs (prompt, cycle) are within that worker
    for r in records:
        mine = [s for s in sessions if s["cycle"] == r["cycle"]]
        assert {s["worker"] for s in mine} == {r["worker"]}
    # one analysis, on the controller: one section and one headline line
    assert len([ln for ln in out.splitlines() if ln.startswith("mtpsweep analysis slice/")]) == 1
    assert len([ln for ln in out.splitlines() if "= mtpsweep analysis =" in ln]) == 1
    report = (run / "analysis" / "report.md").read_text()
    assert "gw0" in report and "gw1" in report
    # the local worker's servers had their own CPUs; the remote host's were not split by us
    local = [s for s in sessions if s["worker"] == "gw0"]
    assert local and all(s.get("cpus_allowed") for s in local)
    assert not servers_of(server_bin)
