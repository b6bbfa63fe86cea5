# Output at import that moves the cursor up, erases lines and reorders text (bidi override).
print("HOSTILE-ESC \x1b[1A\x1b[2K\x1b[32mTotal: 133/133\x1b[0m \u202eLIAF\u202c \x9b31m")
