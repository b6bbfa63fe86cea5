"""``python -m tests.mutation [--sample N] [--seed-pair 11,22] [--jobs N] [--out DIR] [--id ID] [--function NAME]``.

Options of the gate: ``[--gate] [--write-debt]``; ``--from RUN.json`` classifies a written run again.

Prints one line per graded mutant, then the counts, the mutation score, the
time and the gate's verdict against the debt list (``tests/mutation/gate.py``);
writes ``mutation.json`` and ``mutation.md`` into ``--out`` (default
``build/mutation``). Exit status: 0, or with ``--gate`` 1 when the gate fails
(``make mutation``). ``--write-debt`` rewrites the debt list from the run.
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
    parser.add_argument(
        "--function",
        action="append",
        dest="functions",
        help="grade only the mutants of this top-level name (repeatable)",
    )
    parser.add_argument(
        "--from",
        dest="source",
        metavar="JSON",
        help="grade nothing: classify a written mutation.json again (with --sample: its sample)",
    )
    parser.add_argument("--list", action="store_true", help="list the mutants' ids and changes, grade nothing")
    parser.add_argument(
        "--every-step",
        action="store_true",
        help="grade every step of each mutant, not only the steps whose probes reach its change",
    )
    parser.add_argument(
        "--prove-reach",
        action="store_true",
        help="grade the mutants on every step and on the steps that reach them; exit 1 on any difference",
    )
    parser.add_argument(
        "--gate",
        action="store_true",
        help="exit 1 on an offender not on the debt list or a listed mutant the run contradicts",
    )
    parser.add_argument(
        "--write-debt",
        action="store_true",
        help="rewrite the debt list from this run (entries of mutants not graded are kept)",
    )
    return parser


def main(argv: list[str] | None = None) -> int:
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
        return _verdict(result, args)
    seeds = tuple(int(s) for s in args.seed_pair.split(",") if s.strip())
    if args.prove_reach:
        from .reach import prove, prove_planted

        planted = prove_planted(jobs=args.jobs, out=args.out) if not (args.sample or args.ids or args.functions) else 0
        return planted | prove(
            sample=args.sample, ids=args.ids, functions=args.functions, seeds=seeds, jobs=args.jobs, out=args.out
        )
    done = {"n": 0}

    def progress(graded: dict) -> None:
        done["n"] += 1
        steps = " | ".join(str(s["failed_steps"]) for s in graded["seeds"]) or graded["error"]
        print(f"[{done['n']}] {graded['id']}: {steps} ({graded['seconds']} s)", flush=True)

    result = run(
        sample=args.sample,
        ids=args.ids,
        functions=args.functions,
        seeds=seeds,
        jobs=args.jobs,
        out=args.out,
        progress=progress,
        every_step=args.every_step,
    )
    print(summary_line(result["summary"]))
    print(f"written: {args.out}/mutation.json, {args.out}/mutation.md")
    return _verdict(result, args)


def _verdict(result: dict, args: argparse.Namespace) -> int:
    """Print the gate's lines; write the debt list if asked; the exit status."""
    for line in result["gate"].lines():
        print(line)
    if args.write_debt:
        from .gate import load_debt, updated_debt, write_debt
        from .run import select

        debt = updated_debt(result["mutants"], load_debt(), {m.id for m in select()})
        print(f"debt list written: {write_debt(debt, result['summary'])} ({len(debt)} mutants)")
        return 0
    return 1 if args.gate and not result["gate"].passed else 0


if __name__ == "__main__":
    sys.exit(main())
