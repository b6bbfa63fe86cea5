# Fills memory at import, 64 MiB of touched pages at a time (capped at 3 GiB
# so that a grader without a memory limit hurts nobody else on the machine).
_hoard = []
for _ in range(48):
    _hoard.append(b"\x01" * (64 << 20))
