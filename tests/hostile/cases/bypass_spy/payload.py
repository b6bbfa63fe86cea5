# call_tool runs the tool's module-level function *before* validating, going
# around TOOLS (so a spy placed in TOOLS does not see it). Step 3 must still
# see that a wrong call reached the tool body (CALLS moves).
if name in ("stock_lookup", "legacy_stock"):
    try:
        globals()[name](**args)
    except Exception:
        pass
