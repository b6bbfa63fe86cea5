# Shadowing attempt: if the grader ever imports this file instead of the
# package named langgraph, it records the fact and kills the process.
import os
with open("@@OUTSIDE@@/shadowed.txt", "a") as fh:
    fh.write("langgraph\n")
os._exit(97)
