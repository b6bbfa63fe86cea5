# Output at import that closes the report's fence and <details> block, then opens live HTML.
print("HOSTILE-MD ```\n````\n</details><img src=x onerror=alert(1)><title>pwned</title>\n$x^2$")
