"""Start servers for the end-to-end tests, wait for them, and stop everything they started.

The servers (JupyterLab, JupyterHub) start their own children in new
sessions (kernels, the proxy, single-user servers), so killing one process
group is not enough. :func:`stop_tree` remembers the whole tree by pid before
asking the root to stop, then kills whatever is left of exactly those pids.

Example::

    >>> port = free_port()
    >>> 1024 < port < 65536
    True
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import psutil


def free_ports(n: int) -> list[int]:
    """``n`` distinct TCP ports on 127.0.0.1 that nothing listens on right now.

    All ``n`` sockets are held open together, so the ports differ. There is a
    small window before the caller binds them; servers are started with
    ``port_retries=0`` so a lost race fails loudly instead of silently moving
    to another port.

    >>> a, b = free_ports(2)
    >>> a != b
    True
    """
    with contextlib.ExitStack() as stack:
        socks = [stack.enter_context(socket.socket(socket.AF_INET, socket.SOCK_STREAM)) for _ in range(n)]
        for s in socks:
            s.bind(("127.0.0.1", 0))
        return [s.getsockname()[1] for s in socks]


def free_port() -> int:
    """One free TCP port on 127.0.0.1 (see :func:`free_ports`)."""
    return free_ports(1)[0]


def start_logged(cmd: list[str], *, log: Path, env: dict, cwd: Path) -> subprocess.Popen:
    """Start ``cmd`` in its own session with stdout+stderr going to ``log``.

    Example::

        proc = start_logged(["jupyter", "lab"], log=tmp / "lab.log", env=os.environ.copy(), cwd=tmp)
    """
    log.parent.mkdir(parents=True, exist_ok=True)
    with open(log, "wb") as out:  # the child keeps its own copy of the descriptor
        return subprocess.Popen(
            cmd,
            stdout=out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            env=env,
            cwd=cwd,
            start_new_session=True,
        )


def tail(log: Path, lines: int = 40) -> str:
    """The last ``lines`` lines of a log file, for failure messages."""
    try:
        return "\n".join(log.read_text(errors="replace").splitlines()[-lines:])
    except OSError as exc:
        return f"(no log: {exc})"


def wait_for_http(url: str, *, proc: subprocess.Popen, log: Path, timeout: float, ok=(200,)) -> None:
    """Poll ``url`` until it answers with a status in ``ok``; fail early if ``proc`` died.

    Example::

        wait_for_http(f"http://127.0.0.1:{port}/api/status?token=t", proc=proc, log=log, timeout=60)
    """
    deadline = time.monotonic() + timeout
    last = "no answer yet"
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"server exited with {proc.returncode} before answering {url}:\n{tail(log)}")
        try:
            with urllib.request.urlopen(url, timeout=5) as resp:
                if resp.status in ok:
                    return
                last = f"HTTP {resp.status}"
        except urllib.error.HTTPError as exc:
            if exc.code in ok:
                return
            last = f"HTTP {exc.code}"
        except (urllib.error.URLError, OSError) as exc:
            last = str(exc)
        time.sleep(0.25)
    raise TimeoutError(f"{url} did not answer within {timeout:.0f}s ({last}):\n{tail(log)}")


def stop_tree(proc: subprocess.Popen, *, grace: float = 15.0) -> None:
    """Stop ``proc`` and every process it started, by pid, SIGTERM first then SIGKILL.

    SIGTERM lets JupyterLab shut its kernels down and JupyterHub stop its
    proxy and single-user servers cleanly; whatever is still alive after
    ``grace`` seconds is killed.
    """
    try:
        root = psutil.Process(proc.pid)
        tree = [root, *root.children(recursive=True)]
    except psutil.NoSuchProcess:
        tree = []
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=grace)
        except subprocess.TimeoutExpired:
            pass
    _, alive = psutil.wait_procs(tree, timeout=2)
    for p in alive:
        try:
            p.kill()
        except psutil.NoSuchProcess:
            pass
    psutil.wait_procs(alive, timeout=5)
    if proc.poll() is None:
        proc.kill()
        proc.wait(timeout=5)


def venv_bin(name: str) -> str:
    """The path of console script ``name`` beside the running interpreter (the project venv)."""
    candidate = Path(sys.executable).parent / name
    return str(candidate) if candidate.exists() else name


def child_env(**overrides: str) -> dict:
    """``os.environ`` with the venv's bin first on PATH and ``overrides`` applied."""
    env = os.environ.copy()
    env["PATH"] = str(Path(sys.executable).parent) + os.pathsep + env.get("PATH", "")
    env.update(overrides)
    return env
