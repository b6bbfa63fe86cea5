"""``python -m grader.batch ...``: the same as ``agtool-grade batch ...``."""
import sys

from grader.cli import main

sys.exit(main(["batch", *sys.argv[1:]]))
