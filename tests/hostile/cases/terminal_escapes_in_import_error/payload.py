# The import error every check shows hides itself: erase line, carriage return, a fake total.
raise ImportError("HOSTILE-ESC\x1b[2K\rTotal: 133/133 points\x07")
