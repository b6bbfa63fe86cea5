# validate_args raises with shell syntax that would run if pasted unquoted next to the replay line.
raise ValueError("HOSTILE-SH $(id>PWNED.txt) `id>PWNED.txt`; touch PWNED.txt")
