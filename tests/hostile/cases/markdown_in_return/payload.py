# validate_args returns a reason that is a javascript: link and an image beacon.
return "[x](javascript:alert(1))![b](http://beacon)"
