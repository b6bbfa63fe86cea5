# write_report pours 2 GiB onto stdout and stderr (raw writes, once per process)
# before doing its job: the grader must cap what it keeps while reading.
if _hostile_once("huge_output"):
    _chunk = b"HOSTILE-FLOOD " * (1 << 16)  # ~0.9 MiB
    for _i in range(2400):
        try:
            _hostile_os.write(1 + _i % 2, _chunk)
        except OSError:
            break
