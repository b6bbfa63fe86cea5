# write_report forks up to 600 processes, each of which calls setsid() and
# becomes a marked sleeper (a fork bomb no process group holds), then says how
# many forks it got. Once per process.
if _hostile_once("pids_bomb"):
    _made = 0
    for _ in range(600):
        try:
            _pid = _hostile_os.fork()
        except OSError:  # the step's process limit said no
            break
        if _pid == 0:
            _hostile_os.setsid()
            _hostile_exec_sleeper("pids", 120)
        _made += 1
    print(f"HOSTILE-PIDS-MADE {_made}", flush=True)
