# Shadowing attempt: if the grader ever imports this file instead of the
# standard library's operator, it records the fact and kills the process.
import os
with open("@@OUTSIDE@@/shadowed.txt", "a") as fh:
    fh.write("operator\n")
os._exit(97)
