# The module fails to import with a lone surrogate in the message every check then shows.
raise ImportError("HOSTILE \udc80 cannot import")
