"""``python -m tests.mutation [--sample N] [--seed-pair 11,22] [--jobs N] [--out DIR] [--id ID] [--function NAME]``.

Prints one line per graded mutant that is not in its own step's class, then the
counts, the mutation score and the time; writes ``mutation.json`` and
``mutation.md`` into ``--out`` (default ``build/mutation``). Exit status 0:
this slice measures, it does not gate.
"""
from __future__ import annotations

import argparse
import sys

from .outputs import summary_line
from .run import SEED_PAIR, run


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m tests.mutation", description=__doc__.splitlines()[0])
    parser.add_argument("--sample", type=int, default=None, help="a stratified sample of N mutants (default: all)")
    parser.add_argument("--seed-pair", default=",".join(map(str, SEED_PAIR)), help="the seeds, comma-separated")
    parser.add_argument("--jobs", type=int, default=2, help="mutants graded at once (worker processes)")
    parser.add_argument("--out", default="build/mutation", help="folder for mutation.json and mutation.md")
    parser.add_argument("--id", action="append", dest="ids", help="grade only this mutant id (repeatable)")
    parser.add_argument("--function", action="append", dest="functions",
                        help="grade only the mutants of this top-level name (repeatable)")
    parser.add_argument("--from", dest="source", metavar="JSON",
                        help="grade nothing: classify a written mutation.json again (with --sample: its sample)")
    parser.add_argument("--list", action="store_true", help="list the mutants' ids and changes, grade nothing")
    return parser


def main(argv: "list[str] | None" = None) -> int:
    args = _parser().parse_args(argv)
    if args.list:
        from .run import select
        for mutant in select(sample=args.sample, ids=args.ids, functions=args.functions):
            print(f"{mutant.id}\t{mutant.before!r} -> {mutant.after!r}")
        return 0
    if args.source:
        from .run import resummarize
        result = resummarize(args.source, sample=args.sample, out=args.out)
        print(summary_line(result["summary"]))
        return 0
    seeds = tuple(int(s) for s in args.seed_pair.split(",") if s.strip())
    done = {"n": 0}

    def progress(graded: dict) -> None:
        done["n"] += 1
        steps = " | ".join(str(s["failed_steps"]) for s in graded["seeds"]) or graded["error"]
        print(f"[{done['n']}] {graded['id']}: {steps} ({graded['seconds']} s)", flush=True)

    result = run(sample=args.sample, ids=args.ids, functions=args.functions, seeds=seeds, jobs=args.jobs, out=args.out, progress=progress)
    print(summary_line(result["summary"]))
    print(f"written: {args.out}/mutation.json, {args.out}/mutation.md")
    return 0


if __name__ == "__main__":
    sys.exit(main())
