# validate_args raises KeyboardInterrupt (not an Exception) when the grader calls it.
raise KeyboardInterrupt("HOSTILE: pretend the user pressed Ctrl-C")
