"""Planted defects (catalog.py) and an in-process harness for the grader's own tests."""
