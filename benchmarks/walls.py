"""What the grading walls cost: gradings with the clean start and each step's own namespaces and syscall filter,
paired against the same tree with them switched off (``AGTOOL_CLEAN_START=0``, ``AGTOOL_STEP_WALLS=0``).

Two engines in bubblewrap, one with each setting, grade the same module in turn (on, off, off, on, ...), so a
drift of the machine's speed reaches both; each pair gives a ratio and the medians are printed side by side.
Needs bubblewrap and root (as the walls do).

    $ .venv/bin/python benchmarks/walls.py --gradings 16
    module solutions/tools.py, 16 gradings a side, every step
    walls on : median 0.262 s (min 0.241, max 0.318)
    walls off: median 0.255 s (min 0.236, max 0.301)
    paired ratio on/off: median 1.02 (min 0.93, max 1.14)
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

from grader.engine.client import EngineClient
from grader.grading import grade
from grader.locate import Submission
from grader.settings import Settings

REPO = Path(__file__).resolve().parents[1]


def _engine(walls: bool) -> EngineClient:
    settings = Settings(sandbox="bwrap", clean_start=walls, step_walls=walls)
    return EngineClient(sandbox="bwrap", idle_timeout=0, settings=settings)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--gradings", type=int, default=16, help="gradings a side (default 16)")
    parser.add_argument("--module", default=str(REPO / "solutions" / "tools.py"))
    args = parser.parse_args(argv)
    source = Path(args.module).read_bytes()
    engines = {"on": _engine(True), "off": _engine(False)}
    times: dict[str, list[float]] = {"on": [], "off": []}
    try:
        for i in range(args.gradings + 1):  # the first round warms both engines up and is not counted
            order = ("on", "off") if i % 2 else ("off", "on")
            for name in order:
                started = time.perf_counter()
                grade(Submission(source, "tools.py"), seed=7, engine=engines[name])
                if i:
                    times[name].append(time.perf_counter() - started)
    finally:
        for engine in engines.values():
            engine.close()
    ratios = [a / b for a, b in zip(times["on"], times["off"])]
    print(f"module {args.module}, {args.gradings} gradings a side, every step")
    for name in ("on", "off"):
        values = times[name]
        print(
            f"walls {name:<3}: median {statistics.median(values):.3f} s (min {min(values):.3f}, max {max(values):.3f})"
        )
    print(f"paired ratio on/off: median {statistics.median(ratios):.2f} (min {min(ratios):.2f}, max {max(ratios):.2f})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
