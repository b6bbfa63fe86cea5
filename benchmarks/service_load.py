"""Load and faults of the grading service behind a real JupyterHub: figures, not a timed test.

    .venv/bin/python benchmarks/service_load.py [--bursts 60 300] [--jobs 2] [--only bursts|hostile|flood|all]

For each burst size N: N submissions of the reference solution at once
(from two learners' tokens, the rate limit raised), then the time from each
POST to its attempt being graded (p50, p95, all done), and the p95 of
``GET api/submissions`` while the burst is graded. Then a fault: a burst,
``kill -9`` of the service in the middle, a restart, and a check that every
accepted attempt ends graded (each report is stored once: the conditional
update of ``grader.service.db.Store.finish``).

Each burst also says where the CPU went, per graded attempt, by process:
the service's own process (HTTP, database, dispatcher), its grading workers
(drawing and judging), the engine below them (fork servers and step
children: the learner's code), the hub, the proxy, and this script (the
load itself). CPU seconds, not wall time: on a shared machine they are what
the service asked for, whatever else was running. The load average before
each burst is printed too.

Hostile load (``--only hostile``), on loopback only and bounded:

* ``--held N`` (1,000) unauthenticated uploads held open on the service's own
  port (headers announcing 1.25 MiB, then as much body as the socket takes,
  then nothing): the service process's RSS before and at its peak, and how
  many connections it still holds after a few seconds; then the same with a
  learner's token (the upload cap answers 503 past ``--max-uploads``).
* A flood from one learner: a classmate's reference solution graded alone
  (idle), then again while ``--flood N`` (8) attempts of another learner,
  each sleeping ``--sleep S`` (5) seconds at import, are queued before it;
  the ratio must stay under 2.

Uses the hub harness of ``tests/test_service.py`` (configurable-http-proxy
from ``make e2e-deps``).
"""

from __future__ import annotations

import argparse
import os
import socket
import statistics
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))

from e2e.classroom import SOLUTION, Classroom  # noqa: E402 - the tests' hub harness, found through the path above
from e2e.classroom import proxy_command as _chp  # noqa: E402 - as above


def _cpu(proc) -> float:
    """CPU seconds of one process and of its children it has reaped."""
    t = proc.cpu_times()
    return t.user + t.system + t.children_user + t.children_system


def cpu_by_part(room: Classroom) -> dict[str, float]:
    """CPU seconds so far of the service (its own process, workers, engine), the hub, the proxy, this script."""
    import psutil

    parts = {"service process": 0.0, "grading workers": 0.0, "engine (learner code)": 0.0, "hub": 0.0, "proxy": 0.0}
    try:
        service = psutil.Process(room.service.pid)
        parts["service process"] = sum(service.cpu_times()[:2])
        for child in service.children():
            parts["grading workers"] += sum(child.cpu_times()[:2])
            # The workers' own children (fork servers), with the step children they reaped.
            for engine in child.children(recursive=True):
                if engine.ppid() == child.pid:
                    parts["engine (learner code)"] += _cpu(engine)
        hub = psutil.Process(room.hub.pid)
        parts["hub"] = sum(hub.cpu_times()[:2])
        parts["proxy"] = sum(_cpu(p) for p in hub.children(recursive=True))
    except psutil.Error:
        pass
    mine = os.times()
    parts["load script"] = mine.user + mine.system
    return parts


def wait_for_engines(room: Classroom, jobs: int, timeout: float = 30.0) -> float:
    """Seconds until each of the service's ``jobs`` workers has a fork server that has gone quiet."""
    import psutil

    start = time.monotonic()
    last = -1.0
    while time.monotonic() - start < timeout:
        try:
            workers = psutil.Process(room.service.pid).children()
            engines = [e for w in workers for e in w.children(recursive=True) if e.ppid() == w.pid]
            used = sum(_cpu(e) for e in engines)
        except psutil.Error:
            engines, used = [], 0.0
        if len(engines) >= jobs and used == last:  # started, and no CPU used in the last 0.5 s
            break
        last = used
        time.sleep(0.5)
    return time.monotonic() - start


def cpu_line(before: dict, after: dict, graded: int) -> str:
    per = {k: 1000 * (after[k] - before.get(k, 0.0)) / max(1, graded) for k in after}
    total = sum(per.values())
    return "CPU per graded attempt: " + ", ".join(f"{k} {v:.0f} ms" for k, v in per.items()) + f"; all {total:.0f} ms"


def pct(values: list[float], q: float) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, int(round(q * (len(values) - 1))))]


def burst(room: Classroom, n: int) -> tuple[list[tuple[str, int, float]], list[float]]:
    """Submit n at once; return (user, id, submit time) of each accepted one and the GET latencies meanwhile."""
    users = ["alice", "bob"]

    def post(i):
        t = time.monotonic()
        status, data = room.api("POST", "api/submissions", users[i % 2], SOLUTION)
        assert status == 202, (status, data)
        return users[i % 2], data["id"], t

    gets: list[float] = []
    stop = threading.Event()

    def poll_gets():
        while not stop.is_set():
            t = time.monotonic()
            assert room.api("GET", "api/submissions", "alice")[0] == 200
            gets.append(time.monotonic() - t)
            time.sleep(0.1)

    poller = threading.Thread(target=poll_gets)
    poller.start()
    with ThreadPoolExecutor(max_workers=min(n, 60)) as pool:
        accepted = list(pool.map(post, range(n)))
    return accepted, gets, stop, poller


def wait_all(room: Classroom, accepted, timeout: float) -> dict[int, float]:
    """Poll the lists until every accepted attempt is graded; return id -> time first seen graded."""
    pending = {a_id for _, a_id, _ in accepted}
    done: dict[int, float] = {}
    deadline = time.monotonic() + timeout
    while pending and time.monotonic() < deadline:
        for user in ("alice", "bob"):
            status, rows = room.api("GET", "api/submissions", user)
            if status != 200:
                continue
            now = time.monotonic()
            for row in rows:
                if row["id"] in pending and row["status"] in ("graded", "error"):
                    assert row["status"] == "graded" and row["score"] == 133, row
                    pending.discard(row["id"])
                    done[row["id"]] = now
        time.sleep(0.1)
    assert not pending, f"{len(pending)} attempts not graded in {timeout}s"
    return done


HELD_BODY = 1_250_000  # what each held upload announces: the old cap (max_bytes + 1 MiB)


def rss_mib(pid: int) -> float:
    import psutil

    return psutil.Process(pid).memory_info().rss / 2**20


def open_connections(pid: int, port: int) -> int:
    """Established TCP connections of process ``pid`` on its listening ``port``."""
    import psutil

    return sum(
        1
        for c in psutil.Process(pid).net_connections("tcp")
        if c.laddr and c.laddr.port == port and c.status == psutil.CONN_ESTABLISHED
    )


def hold_uploads(port: int, n: int, token: str | None, length: int = HELD_BODY) -> list[socket.socket]:
    """``n`` uploads to 127.0.0.1:``port`` that announce ``length`` bytes, send what the socket takes, then wait."""
    auth = f"Authorization: token {token}\r\n" if token else ""
    head = (
        f"POST /services/agtool-grader/api/submissions HTTP/1.1\r\nHost: 127.0.0.1\r\n{auth}"
        f"Content-Type: text/x-python\r\nContent-Length: {length}\r\n\r\n"
    ).encode()
    if length == 0:  # slowloris: the headers never end
        head = head[: head.index(b"Content-Type")]
    chunk = b"#" * 65536
    held = []
    for _ in range(n):
        sock = socket.create_connection(("127.0.0.1", port), timeout=5)
        sock.setblocking(False)
        try:
            sock.send(head)
            for _ in range((length - 1) // len(chunk)):  # as much body as the kernel's buffers take now
                sock.send(chunk)
        except (BlockingIOError, BrokenPipeError, ConnectionResetError):
            pass
        held.append(sock)
    return held


def held_uploads(room: Classroom, n: int, token: str | None, label: str, length: int = HELD_BODY) -> None:
    """Print the service process's memory before and at its peak while ``n`` uploads are held."""
    pid = room.service.pid
    before, peak = rss_mib(pid), 0.0
    stop = threading.Event()

    def sample():
        nonlocal peak
        while not stop.is_set():
            peak = max(peak, rss_mib(pid))
            time.sleep(0.1)

    sampler = threading.Thread(target=sample)
    sampler.start()
    t = time.monotonic()
    held = hold_uploads(room.service_port, n, token, length)
    opened = time.monotonic() - t
    time.sleep(3)
    still = open_connections(pid, room.service_port)
    time.sleep(10)  # past the service's header timeout (10 s)
    later = open_connections(pid, room.service_port)
    stop.set()
    sampler.join()
    for sock in held:
        sock.close()
    print(
        f"{n} held {label} uploads (opened in {opened:.1f} s): service RSS {before:.0f} MiB before, peak "
        f"{peak:.0f} MiB (+{peak - before:.1f} MiB); connections it still held 3 s later: {still}, "
        f"13 s later: {later}",
        flush=True,
    )


def graded_time(room: Classroom, user: str, body: bytes, timeout: float = 300) -> float:
    """Seconds from POST to graded for one attempt of ``user`` (its status polled every 50 ms)."""
    t = time.monotonic()
    status, data = room.api("POST", "api/submissions", user, body)
    assert status == 202, (status, data)
    while time.monotonic() - t < timeout:
        status, got = room.api("GET", f"api/submissions/{data['id']}", user)
        if got["status"] in ("graded", "error"):
            assert got["status"] == "graded", got
            return time.monotonic() - t
        time.sleep(0.05)
    raise AssertionError(f"attempt {data['id']} not graded in {timeout} s")


def slow_import(source: bytes, sleep: float) -> bytes:
    """``source`` sleeping ``sleep`` seconds at import (after its ``from __future__`` line, which must come first)."""
    future = b"from __future__ import annotations\n"
    wait = f"import time\ntime.sleep({sleep})\n".encode()
    return source.replace(future, future + wait, 1) if future in source else wait + source


def flood(room: Classroom, n: int, sleep: float, samples: int = 3) -> None:
    """A classmate's attempt alone, then behind ``n`` slow attempts of one learner: the ratio (must be < 2)."""
    graded_time(room, "bob", SOLUTION)  # warm: the first grading of a worker pays its imports
    idle = [graded_time(room, "bob", SOLUTION) for _ in range(samples)]
    slow = slow_import(SOLUTION, sleep)
    for _ in range(n):
        status, data = room.api("POST", "api/submissions", "alice", slow)
        assert status == 202, (status, data)
    time.sleep(1)  # the flood holds the workers it may
    loaded = [graded_time(room, "bob", SOLUTION) for _ in range(samples)]
    ratio = max(loaded) / statistics.median(idle)  # the worst: later samples may find the flood drained
    waiting = sum(1 for a in room.api("GET", "api/submissions", "alice")[1] if a["status"] in ("queued", "grading"))
    print(
        f"flood of {n} attempts sleeping {sleep:g} s at import from one learner: a classmate's attempt graded "
        f"in {' '.join(f'{x:.1f}' for x in loaded)} s (idle: {' '.join(f'{x:.1f}' for x in idle)} s); "
        f"worst / idle median {ratio:.2f} (must be < 2); the flood's attempts still queued or grading then: {waiting}; "
        f"load average {os.getloadavg()[0]:.2f}",
        flush=True,
    )


def hostile(room: Classroom, args) -> None:
    held_uploads(room, args.held, None, "unauthenticated")
    held_uploads(room, args.held, None, "half-header (slowloris)", length=0)
    held_uploads(room, args.held, "not-a-token", "bad-token")
    held_uploads(
        room,
        args.held,
        room.tokens["alice"],
        "authenticated (one learner's token, 256 KiB announced)",
        length=256 * 1024,
    )
    flood(room, args.flood, args.sleep)


def bursts(room: Classroom, args) -> None:
    for n in args.bursts:
        print(f"load average before the burst of {n}: {os.getloadavg()[0]:.2f} (2 cores)", flush=True)
        cpu0 = cpu_by_part(room)
        t0 = time.monotonic()
        accepted, gets, stop, poller = burst(room, n)
        done = wait_all(room, accepted, timeout=60 + n * 3)
        stop.set()
        poller.join()
        lat = [done[a_id] - t for _, a_id, t in accepted]
        print(
            f"burst {n}: accepted {len(accepted)}, graded {len(done)}; submit->graded "
            f"p50 {statistics.median(lat):.1f} s, p95 {pct(lat, 0.95):.1f} s, all within "
            f"{max(done.values()) - t0:.1f} s; GET api/submissions p95 {1000 * pct(gets, 0.95):.0f} ms "
            f"({len(gets)} GETs)",
            flush=True,
        )
        print("  " + cpu_line(cpu0, cpu_by_part(room), len(done)), flush=True)
    # The fault: kill -9 in the middle of a burst, restart, every accepted attempt graded.
    accepted, gets, stop, poller = burst(room, 60)
    stop.set()
    poller.join()
    time.sleep(3)
    room.kill_service()
    t = time.monotonic()
    room.start_service("--rate-limit", "100000", "--jobs", str(args.jobs))
    done = wait_all(room, accepted, timeout=300)
    total = sum(len(room.api("GET", "api/submissions", u)[1]) for u in ("alice", "bob"))
    print(
        f"kill -9 after 3 s of a burst of 60, restart: {len(done)}/{len(accepted)} accepted attempts "
        f"graded {time.monotonic() - t:.1f} s after the restart; attempts stored {total} "
        f"(= {sum(args.bursts) + 60} submitted)",
        flush=True,
    )


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--bursts", type=int, nargs="+", default=[60, 300])
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--only", choices=("bursts", "hostile", "flood", "all"), default="all")
    parser.add_argument("--held", type=int, default=1000, help="uploads held open (at most 2000)")
    parser.add_argument("--flood", type=int, default=8, help="slow attempts of one learner (at most 50)")
    parser.add_argument("--sleep", type=float, default=5.0, help="seconds each flooding attempt sleeps at import")
    args = parser.parse_args()
    args.held, args.flood = min(args.held, 2000), min(args.flood, 50)  # bounded: loopback, and no runaway
    with tempfile.TemporaryDirectory(prefix="agtool-load-") as tmp:
        room = Classroom(Path(tmp) / "hub", _chp(), f"sqlite:///{tmp}/service.sqlite")
        try:
            room.start_hub()
            room.start_service("--rate-limit", "100000", "--jobs", str(args.jobs))
            # A class submits to a service that is up: its workers start their fork servers
            # (LangGraph's import, about 0.7 s of CPU each) when it starts, before any attempt.
            warm = wait_for_engines(room, args.jobs)
            print(f"service up; its {args.jobs} workers' fork servers ready after {warm:.1f} s", flush=True)
            if args.only in ("hostile", "all"):
                hostile(room, args)
            if args.only == "flood":
                flood(room, args.flood, args.sleep)
            if args.only in ("bursts", "all"):
                bursts(room, args)
        finally:
            room.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
