"""The hostile-submission corpus: submissions that try to fool, crash or outlive the grader.

``manifest.CASES`` lists every case with its expected per-step outcome and time
bound; ``build.materialise`` writes a case to disk; ``procs`` finds processes a
case left behind. ``tests/test_hostile.py`` runs them all.
"""
