"""A learner module with a syntax error on line 9 (an unclosed parenthesis)."""
REGIONS = ["north", "south", "east", "west", "central"]
FALLBACK_REGION = "central"
MAX_ROWS = 5
CALLS = {"stock_lookup": 0, "legacy_stock": 0}


def stock_lookup(sku, region, limit):
    CALLS["stock_lookup"] += 1 + (
    return {"sku": sku, "region": region, "rows": []}
