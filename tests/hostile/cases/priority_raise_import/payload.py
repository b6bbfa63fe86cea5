# At import: tries to raise its CPU priority (nice -5, setpriority -10) and,
# where it is in one of the grader's cgroups (agtool-...), to loosen its limits
# and to move itself to the parent group. Says HOSTILE-RAISED if anything
# worked, HOSTILE-PRIO-HELD otherwise.
import os as _pr


def _hostile_priority():
    done = []
    for attempt in (lambda: _pr.nice(-5), lambda: _pr.setpriority(_pr.PRIO_PROCESS, 0, -10)):
        try:
            attempt()
        except OSError:
            pass
    nice = _pr.getpriority(_pr.PRIO_PROCESS, 0)
    if nice < 19:
        done.append(f"nice {nice}")
    with open("/proc/self/cgroup") as fh:
        before = fh.read()
    roots = {"": "/sys/fs/cgroup"}
    for line in open("/proc/self/mountinfo"):
        left, _, right = line.partition(" - ")
        if right.split()[:1] == ["cgroup"]:
            for name in right.split()[2].split(","):
                roots[name] = left.split()[4]
        elif right.split()[:1] == ["cgroup2"]:
            roots[""] = left.split()[4]
    for line in before.splitlines():
        _, names, path = line.split(":", 2)
        if "/agtool-" not in path:
            continue
        for name in names.split(",") if names else [""]:
            folder = roots.get(name, "") + path
            for file, value in (("memory.limit_in_bytes", "-1"), ("memory.max", "max"), ("pids.max", "max"),
                                ("cpu.cfs_quota_us", "-1"), ("cpu.max", "max"),
                                ("../cgroup.procs", "0")):
                try:
                    with open(f"{folder}/{file}", "w") as fh:
                        fh.write(value)
                    done.append(f"wrote {name or 'v2'} {file}")
                except OSError:
                    pass
    with open("/proc/self/cgroup") as fh:
        if fh.read() != before:
            done.append("left its group")
    print(f"HOSTILE-RAISED {done}" if done else f"HOSTILE-PRIO-HELD nice={nice}", flush=True)


_hostile_priority()
