# Invalid UTF-8 (an encoded lone surrogate) and a str with one, on both captured streams.
import sys as _sys
_sys.stdout.buffer.write(b"HOSTILE \xed\xa0\x80 bytes\n")
_sys.stdout.flush()
_sys.stderr.write("HOSTILE \ud800 text\n".encode("utf-8", "surrogatepass").decode("utf-8", "surrogateescape"))
