# validate_args raises with a message that is an @ formula (the message is a check's error).
raise ValueError("@SUM(A1:A9)")
