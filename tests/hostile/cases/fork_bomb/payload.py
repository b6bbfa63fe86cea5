# write_report grows a binary tree of forks (depth 5: at most 62 processes,
# bounded so that a grader without a process limit hurts nobody), each of which
# becomes a marked sleeper; then it writes a correct report as if nothing happened.
if _hostile_once("fork_bomb"):
    def _grow(depth):
        for _ in range(2):
            try:
                pid = _hostile_os.fork()
            except OSError:  # the process limit said no: carry on quietly
                return
            if pid == 0:
                if depth > 1:
                    _grow(depth - 1)
                _hostile_exec_sleeper("fork")
    _grow(5)
