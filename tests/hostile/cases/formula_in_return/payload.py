# validate_args returns reasons a spreadsheet evaluates (they reach the summary and the CSV as got).
return "-1-1"
