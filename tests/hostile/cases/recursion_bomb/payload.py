# handle lifts the recursion limit and recurses through C code (list/map), so
# the C stack overflows: the process dies of SIGSEGV, no Python exception.
import sys as _rs
_rs.setrecursionlimit(10 ** 8)
def _dive(n):
    return list(map(_dive, [n + 1]))
_dive(0)
