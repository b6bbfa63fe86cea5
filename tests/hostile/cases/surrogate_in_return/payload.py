# validate_args returns a lone surrogate (the reason a report shows as "got").
return "HOSTILE \udcff reason"
