"""The checker's jail, run as its own script: `python -I -S jail.py CONFIG_JSON`.

It isolates what the platform allows, then execs the checker:

- namespaces (unshare): a new network namespace (no interface but a down loopback: no
  network), a new PID namespace (the checker is PID 1 there: when it exits the kernel kills every
  process it left, and none can escape by setsid), a new mount namespace (the filesystem
  read-only, the work directory a size-limited tmpfs, a private /proc) and a new IPC namespace.
  As root directly; otherwise inside a new user namespace. What was achieved is reported.
- as root, the checker runs as `nobody` (so RLIMIT_NPROC binds: root is exempt from it);
- resource limits: CPU seconds, address space, file size, processes, open files, no core;
- no new privileges (setuid binaries gain nothing); it dies with the jail (PDEATHSIG).

Standard library only: it never imports the package, and it writes nothing to stdout/stderr
except its own setup failure (exit status 121).
"""

from __future__ import annotations

import ctypes
import json
import os
import resource
import signal
import sys
from typing import Any

CLONE_NEWNS, CLONE_NEWIPC, CLONE_NEWUSER = 0x00020000, 0x08000000, 0x10000000
CLONE_NEWPID, CLONE_NEWNET = 0x20000000, 0x40000000
MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC, MS_REMOUNT = 1, 2, 4, 8, 32
MS_BIND, MS_REC, MS_PRIVATE = 4096, 16384, 1 << 18
PR_SET_PDEATHSIG, PR_SET_NO_NEW_PRIVS = 1, 38
MNT_DETACH = 2
PIVOT_ROOT = {"x86_64": 155, "aarch64": 41, "riscv64": 41}.get(os.uname().machine, -1)
DEVICES = ("/dev/null", "/dev/zero", "/dev/urandom", "/dev/random")
NOBODY = 65534
SETUP_FAILED = 121
# World-writable places a checker could fill; each becomes read-only in the mount namespace.
READ_ONLY = ("/", "/tmp", "/var/tmp", "/dev/shm", "/run", "/run/lock", "/dev/mqueue")

libc = ctypes.CDLL(None, use_errno=True)


def _err() -> str:
    return os.strerror(ctypes.get_errno())


def _mount(src: str | None, target: str, fstype: str | None, flags: int, data: str | None) -> None:
    enc = [None if v is None else v.encode() for v in (src, target, fstype, data)]
    if libc.mount(enc[0], enc[1], enc[2], ctypes.c_ulong(flags), enc[3]) != 0:
        raise OSError(ctypes.get_errno(), f"mount {target}: {_err()}")


def _tasks_of(uid: int) -> int:
    """Processes and threads of `uid` now (RLIMIT_NPROC counts them all)."""
    n = 0
    for pid in os.listdir("/proc"):
        if pid.isdigit():
            try:
                if os.stat(f"/proc/{pid}").st_uid == uid:
                    n += len(os.listdir(f"/proc/{pid}/task"))
            except OSError:
                continue
    return n


def unshare(report: dict[str, Any]) -> int:
    """The strongest set of namespaces the platform grants (0: none)."""
    base = CLONE_NEWNET | CLONE_NEWPID | CLONE_NEWNS | CLONE_NEWIPC
    if os.geteuid() == 0:
        tries = [base, CLONE_NEWNET | CLONE_NEWPID, CLONE_NEWNET]
    else:
        u = CLONE_NEWUSER
        tries = [u | base, u | CLONE_NEWNET | CLONE_NEWPID, u | CLONE_NEWNET]
    uid, gid = os.getuid(), os.getgid()
    for flags in tries:
        if libc.unshare(ctypes.c_int(flags)) == 0:
            if flags & CLONE_NEWUSER:
                for name, text in (
                    ("setgroups", "deny"),
                    ("uid_map", f"0 {uid} 1"),
                    ("gid_map", f"0 {gid} 1"),
                ):
                    with open(f"/proc/self/{name}", "w") as f:
                        f.write(text)
            return flags
        report.setdefault("unshare_refused", _err())
    return 0


def _blocked(path: str) -> str | None:
    """The first directory on the way to `path` that others (nobody) cannot enter."""
    cur = "/"
    for part in path.strip("/").split("/"):
        if not os.stat(cur).st_mode & 0o001:
            return cur
        cur = os.path.join(cur, part)
    return None


def _expose(paths: list[str], side_root: str) -> list[tuple[str, str, str]]:
    """Bind each path `nobody` cannot reach (an interpreter under /root) to a side mount point,
    before the tree goes read-only: (blocked ancestor, path, side mount point)."""
    out = []
    for i, path in enumerate(paths):
        ancestor = _blocked(path)
        if ancestor is not None and ancestor != "/":
            side = os.path.join(side_root, f"expose{i}")
            os.mkdir(side)
            _mount(path, side, None, MS_BIND | MS_REC, None)
            out.append((ancestor, path, side))
    return out


def _reattach(exposed: list[tuple[str, str, str]], report: dict[str, Any]) -> None:
    """Hide each blocked ancestor under an empty tmpfs and put back only the exposed paths."""
    for ancestor in dict.fromkeys(a for a, _, _ in exposed):
        _mount("tmpfs", ancestor, "tmpfs", MS_NOSUID | MS_NODEV, "size=1m,mode=0755")
    for _, path, side in exposed:
        os.makedirs(path, mode=0o755, exist_ok=True)
        _mount(side, path, None, MS_BIND | MS_REC, None)
        _mount(None, path, None, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV, None)
    report["hidden"] = sorted({a for a, _, _ in exposed})


def mounts(box: str, tmp_mib: int, flags: int, expose: list[str], report: dict[str, Any]) -> None:
    """Private mounts: everything read-only but a size-limited tmpfs work directory."""
    _mount(None, "/", None, MS_REC | MS_PRIVATE, None)
    exposed = _expose(expose, os.path.dirname(box)) if os.geteuid() == 0 and expose else []
    done: list[str] = []
    for path in READ_ONLY:
        if not os.path.isdir(path):
            continue
        try:
            _mount(path, path, None, MS_BIND | MS_REC, None)
            _mount(None, path, None, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV, None)
            done.append(path)
        except OSError as exc:
            report.setdefault("readonly_refused", {})[path] = str(exc)
    report["readonly"] = done
    if exposed:
        _reattach(exposed, report)
    if flags & CLONE_NEWPID:
        _proc("/proc", report)
    _mount("tmpfs", box, "tmpfs", MS_NOSUID | MS_NODEV, f"size={tmp_mib}m,mode=0755")
    report["workdir"] = f"tmpfs {tmp_mib} MiB"


def _proc(target: str, report: dict[str, Any]) -> None:
    try:
        _mount("proc", target, "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, None)
        report["proc"] = "private"
    except OSError as exc:
        report["proc"] = f"host's ({exc})"


def _materialise(root: str, path: str) -> str:
    """Recreate under `root` the symlinks on the way to `path`; the real path it ends at."""
    parts, cur, hops = path.strip("/").split("/"), "/", 0
    while parts:
        step = os.path.join(cur, parts.pop(0))
        if os.path.islink(step):
            target = os.readlink(step)
            inside = root + step
            if not os.path.lexists(inside):
                os.makedirs(os.path.dirname(inside), mode=0o755, exist_ok=True)
                os.symlink(target, inside)
            parts = os.path.normpath(os.path.join(cur, target)).strip("/").split("/") + parts
            cur, hops = "/", hops + 1
            if hops > 40:
                raise OSError(f"too many links on the way to {path}")
        else:
            cur = step
    return cur


def _bind_into(root: str, path: str, writable_dev: bool = False) -> None:
    real = _materialise(root, path)
    inside = root + real
    if os.path.lexists(inside) and os.path.ismount(inside):
        return
    if os.path.isdir(real):
        os.makedirs(inside, mode=0o755, exist_ok=True)
    else:
        os.makedirs(os.path.dirname(inside), mode=0o755, exist_ok=True)
        if not os.path.lexists(inside):
            open(inside, "wb").close()
    _mount(real, inside, None, MS_BIND | MS_REC, None)
    ro = MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | (0 if writable_dev else MS_NODEV)
    _mount(None, inside, None, ro, None)


def minimal_root(cfg: dict[str, Any], flags: int, report: dict[str, Any]) -> None:
    """A new root holding only the exposed paths (read-only), a few devices, a private /proc
    and the work directory; the host's tree is detached (pivot_root), so no other file —
    checkout, home, temporary directory, run directory — can be reached or listed."""
    spec, box = cfg["root"], cfg["box"]
    root = spec["dir"]
    _mount(None, "/", None, MS_REC | MS_PRIVATE, None)
    _mount("tmpfs", root, "tmpfs", MS_NOSUID | MS_NODEV, "size=1m,mode=0755")
    for path in spec["expose"]:
        if os.path.lexists(path):
            _bind_into(root, path)
    for path in spec.get("hide", []):
        inside = root + path
        if os.path.isdir(inside):
            _mount("tmpfs", inside, "tmpfs", MS_NOSUID | MS_NODEV | MS_RDONLY, "size=4k,mode=0555")
    for dev in DEVICES:
        if os.path.exists(dev):
            _bind_into(root, dev, writable_dev=True)
    if flags & CLONE_NEWPID:
        os.makedirs(root + "/proc", mode=0o555)
        _proc(root + "/proc", report)
    os.makedirs(root + box, mode=0o755)
    _mount("tmpfs", root + box, "tmpfs", MS_NOSUID | MS_NODEV, f"size={cfg['tmp_mib']}m,mode=0755")
    os.chdir(root)
    if libc.syscall(ctypes.c_long(PIVOT_ROOT), b".", b".") != 0:
        raise OSError(ctypes.get_errno(), f"pivot_root: {_err()}")
    if libc.umount2(b".", ctypes.c_int(MNT_DETACH)) != 0:
        raise OSError(ctypes.get_errno(), f"detaching the old root: {_err()}")
    os.chdir("/")
    _mount(None, "/", None, MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV, None)
    report["root"] = "minimal"
    report["workdir"] = f"tmpfs {cfg['tmp_mib']} MiB"


def limits(cfg: dict[str, Any], uid: int, tasks: int) -> None:
    mib = 1024 * 1024
    pairs = {
        resource.RLIMIT_CPU: (cfg["cpu_s"], cfg["cpu_s"] + 1),  # SIGXCPU, then SIGKILL
        resource.RLIMIT_AS: (cfg["memory_mib"] * mib,) * 2,
        resource.RLIMIT_FSIZE: (cfg["file_mib"] * mib,) * 2,
        resource.RLIMIT_NPROC: (tasks + cfg["nproc"],) * 2,
        resource.RLIMIT_NOFILE: (256, 256),
        resource.RLIMIT_CORE: (0, 0),
    }
    for which, (soft, hard) in pairs.items():
        resource.setrlimit(which, (soft, hard))


def child(
    cfg: dict[str, Any], flags: int, files: dict[str, bytes], tasks: int, report: dict[str, Any]
) -> None:
    box = cfg["box"]
    if flags & CLONE_NEWNS and cfg.get("root") and PIVOT_ROOT > 0:
        minimal_root(cfg, flags, report)
    elif flags & CLONE_NEWNS:
        drops = os.geteuid() == 0 and not flags & CLONE_NEWUSER
        mounts(box, cfg["tmp_mib"], flags, cfg["expose"] if drops else [], report)
    for name, data in files.items():
        with open(os.path.join(box, name), "wb") as f:
            f.write(data)
    drop = os.geteuid() == 0 and not flags & CLONE_NEWUSER
    if drop:
        os.chown(box, NOBODY, NOBODY)
        for name in files:
            os.chown(os.path.join(box, name), NOBODY, NOBODY)
        os.setgroups([])
        os.setgid(NOBODY)
        os.setuid(NOBODY)
    report["user"] = "nobody" if drop else ("namespace root" if flags & CLONE_NEWUSER else "same")
    os.chdir(box)
    limits(cfg, os.getuid(), tasks)
    libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0)
    libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    os.write(cfg["report_fd"], json.dumps(report).encode())
    os.close(cfg["report_fd"])
    os.execve(cfg["argv"][0], cfg["argv"], cfg["env"])


def mirror(pid: int) -> None:
    """Wait for the namespace's PID 1 and end as it ended (its status, or its signal)."""
    _, status = os.waitpid(pid, 0)
    if os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        if sig not in (signal.SIGKILL, signal.SIGSTOP):  # those have no handler to reset
            signal.signal(sig, signal.SIG_DFL)
        os.kill(os.getpid(), sig)
        os._exit(128 + sig)
    os._exit(os.WEXITSTATUS(status))


def main() -> None:
    cfg = json.loads(sys.argv[1])
    stage = cfg["stage"]
    files = {}
    for name in os.listdir(stage):
        with open(os.path.join(stage, name), "rb") as f:
            files[name] = f.read()
    target = NOBODY if os.geteuid() == 0 else os.getuid()
    tasks = _tasks_of(target)
    # RLIMIT_NPROC counts every task of the user, those of other checks running beside this one
    # too: the limit is what it runs now plus `nproc`, and the report says the figure
    report: dict[str, Any] = {"processes": tasks + cfg["nproc"]}
    flags = unshare(report)
    report["network"] = "namespace" if flags & CLONE_NEWNET else "host"
    report["pids"] = "namespace" if flags & CLONE_NEWPID else "process group"
    report["filesystem"] = "read-only" if flags & CLONE_NEWNS else "host"
    report["userns"] = bool(flags & CLONE_NEWUSER)
    if flags & CLONE_NEWPID:
        pid = os.fork()
        if pid:
            os.close(cfg["report_fd"])
            mirror(pid)
    child(cfg, flags, files, tasks, report)


if __name__ == "__main__":
    try:
        main()
    except BaseException as exc:  # a setup failure: say so on stderr, with a status of our own
        os.write(2, f"jail: {type(exc).__name__}: {exc}\n".encode())
        os._exit(SETUP_FAILED)
