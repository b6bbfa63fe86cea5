# validate_args raises with escape sequences that clear the screen and draw a green PASS over the FAIL.
raise ValueError("HOSTILE-ESC \x1b[2J\x1b[H\x1b[32m  PASS  step2/all\x1b[0m\r")
