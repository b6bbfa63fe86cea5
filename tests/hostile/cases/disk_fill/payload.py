# write_report tries to write a 1 GiB file into its working folder (once per
# process), records how far it got in a file outside the submission, deletes
# the file and carries on: the file-size limit must stop it early.
import os as _do
if _hostile_once("disk_fill"):
    _written, _stopped = 0, ""
    _fd = _do.open("hostile_fill.bin", _do.O_WRONLY | _do.O_CREAT | _do.O_TRUNC, 0o600)
    _block = b"\0" * (1 << 20)
    try:
        while _written < (1 << 30):
            _n = _do.write(_fd, _block)
            _written += _n
            if _n < len(_block):
                _do.write(_fd, _block)  # the limit cut us short: this one raises
    except OSError as exc:
        _stopped = type(exc).__name__ + ":" + str(exc.errno)
    finally:
        _do.close(_fd)
        _do.unlink("hostile_fill.bin")
    try:  # evidence for the test; unreachable inside a sandbox, which is fine
        with open("@@OUTSIDE@@/fill.txt", "w") as _fh:
            _fh.write(f"{_written} {_stopped}\n")
    except OSError:
        pass
