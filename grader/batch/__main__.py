"""``python -m grader.batch ...``: the same as ``agtool-grade batch ...``.

The command line sits above every package, so this entry point runs it
(``python -m grader``) instead of importing it: ``grader.batch`` never
imports ``grader.cli``.
"""

import runpy
import sys

if __name__ == "__main__":
    sys.argv = [sys.argv[0], "batch", *sys.argv[1:]]
    runpy.run_module("grader", run_name="__main__", alter_sys=True)
