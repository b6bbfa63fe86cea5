"""Importing this package registers every check, step by step."""
