# build_naive raises a home-made BaseException subclass that `except Exception` misses.
class _Escape(BaseException):
    pass
raise _Escape("HOSTILE: not an Exception")
