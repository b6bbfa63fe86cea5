# The import error (the first line goes into grades.csv) is a spreadsheet formula.
raise ImportError("=HYPERLINK(\"http://evil\",\"click\")")
