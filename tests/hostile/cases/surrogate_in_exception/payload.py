# validate_args raises with a lone surrogate in its message: no UTF-8 writer accepts it.
raise ValueError("HOSTILE \ud800 message")
