"""``python -m grader.service [options]``: run the grading service (``agtool-grade serve``)."""

import sys

from grader.service.command import main

if __name__ == "__main__":
    sys.exit(main())
