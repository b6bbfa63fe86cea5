# validate_args raises with Markdown and HTML that would be live in feedback: a link, a beacon, an onerror image, backticks.
raise ValueError("HOSTILE-MD [x](javascript:alert(1)) ![b](http://beacon) <img src=x onerror=alert(1)> a`b``c")
