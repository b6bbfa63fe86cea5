"""``python -m grader``: the same as ``agtool-grade``."""
import sys

from grader.cli import main

sys.exit(main())
