# The import error every check shows is HTML that sets the page title and runs a handler.
raise ImportError("<title>pwned</title><img src=x onerror=alert(1)> HOSTILE-HTML")
