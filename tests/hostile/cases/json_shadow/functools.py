# Shadowing attempt: if the grader ever imports this file instead of the
# standard library's functools, it records the fact and kills the process.
import os
with open("@@OUTSIDE@@/shadowed.txt", "a") as fh:
    fh.write("functools\n")
os._exit(97)
