"""``python -m tests.refactoring [--gate] [--jobs N] [--out DIR] [--limit N] [--seeds 11,22,33] [--seeds-each N]``.

Selection: ``[--id ID] [--base NAME] [--kind KIND]`` (each repeatable); ``--list`` prints the rewrites and grades
nothing; ``--check`` compares each selected rewrite's behaviour with its base's (``behaviour.py``), no grading.

Prints one line per graded module (its bases first, as the control), then the counts, the time and the gate's
verdict: every rewrite that lost a point, by check id, with the seeds and the check's message. Writes
``summary.json`` and ``summary.md`` into ``--out`` (default ``build/refactoring``). Exit status: 0, or with
``--gate`` 1 when a rewrite or a base lost a point or fewer than 300 rewrites were generated
(``make refactoring``); ``--check`` exits 1 when a rewrite behaves otherwise than its base.
"""

from __future__ import annotations

import argparse
import sys
import time

from .run import SEEDS


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m tests.refactoring", description=__doc__.splitlines()[0])
    parser.add_argument("--gate", action="store_true", help="exit 1 when any rewrite loses a point (or too few)")
    parser.add_argument("--jobs", type=int, default=2, help="modules graded at once (worker processes)")
    parser.add_argument("--out", default="build/refactoring", help="folder for summary.json and summary.md")
    parser.add_argument("--limit", type=int, default=None, help="grade only N rewrites, taken in turn from each kind")
    parser.add_argument("--seeds", default=",".join(map(str, SEEDS)), help="the seeds, comma-separated")
    parser.add_argument(
        "--seeds-each",
        type=int,
        default=None,
        help="grade each rewrite on N of the seeds, picked by its id (the bases on all of them)",
    )
    parser.add_argument("--id", action="append", dest="ids", help="grade only this rewrite (repeatable)")
    parser.add_argument("--base", action="append", dest="bases", help="only the rewrites of this base (repeatable)")
    parser.add_argument("--kind", action="append", dest="kinds", help="only the rewrites of this kind (repeatable)")
    parser.add_argument("--no-bases", action="store_true", help="do not grade the bases as the control")
    parser.add_argument("--list", action="store_true", help="list the rewrites, grade nothing")
    parser.add_argument(
        "--check", action="store_true", help="compare each rewrite's behaviour with its base's instead of grading"
    )
    return parser


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    from .run import select

    everything, chosen = select(limit=args.limit, ids=args.ids, base_names=args.bases, kinds=args.kinds)
    if args.list:
        for rewrite in chosen:
            print(rewrite.id)
        print(f"{len(chosen)} of {len(everything)} rewrites")
        return 0
    if args.check:
        return _check(chosen)
    from .outputs import summary_line
    from .run import run

    seeds = tuple(int(s) for s in args.seeds.split(",") if s.strip())
    done = {"n": 0}
    total = len(chosen) + (0 if args.no_bases else 2 * len({r.base for r in chosen}))

    def progress(graded: dict) -> None:
        done["n"] += 1
        lost = (
            "; ".join(
                f"seed {s['seed']}: " + ", ".join(c["id"] for c in s["failed"]) for s in graded["seeds"] if s["failed"]
            )
            or graded["error"]
            or "full marks"
        )
        print(f"[{done['n']}/{total}] {graded['id']}: {lost} ({graded['seconds']} s)", flush=True)

    result = run(
        limit=args.limit,
        ids=args.ids,
        base_names=args.bases,
        kinds=args.kinds,
        seeds=seeds,
        jobs=args.jobs,
        out=args.out,
        bases_too=not args.no_bases,
        progress=progress,
        seeds_each=args.seeds_each,
    )
    print(summary_line(result["summary"]))
    print(f"written: {args.out}/summary.json, {args.out}/summary.md")
    for line in result["verdict"].lines():
        print(line)
    return 1 if args.gate and not result["verdict"].passed else 0


def _check(chosen) -> int:
    from .bases import bases
    from .behaviour import differences

    started, bad = time.monotonic(), 0
    every = bases()
    for rewrite in chosen:
        found = differences(every[rewrite.base].text, rewrite.source)
        if found:
            bad += 1
            print(f"behaves otherwise: {rewrite.id}: {', '.join(found)}", flush=True)
    print(
        f"{len(chosen)} rewrites compared with their bases: {bad} behave otherwise "
        f"({round(time.monotonic() - started, 1)} s)"
    )
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
