# Fills every shared writable place (/tmp, /var/tmp, /dev/shm,
# beside its scratch folder) until the disk says no, to the last block, and
# leaves the files: the learner graded after it on the same worker must still
# be graded right (not 0 with "internal grader error").
import os as _htf


def _fill():
    _here, _total = _htf.getcwd(), 0
    _places = ["/tmp", "/var/tmp", "/dev/shm", _htf.path.dirname(_here)]
    for _place in dict.fromkeys(_places):
        for _size, _most in ((4 << 20, 100), (64 << 10, 64), (4 << 10, 64)):  # under the step's file size limit
            for _n in range(_most):
                try:
                    _name = f".agtool-hostile-fill-{_htf.getpid()}-{_size}-{_n}"
                    with open(_htf.path.join(_place, _name), "wb") as _fh:
                        _fh.write(b"\1" * _size)
                        _total += _size
                except OSError:
                    break
                if _total > (400 << 20):
                    return


_fill()
