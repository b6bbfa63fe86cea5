"""Alembic migrations of the grading service's database (run by ``grader.service.db.migrate``)."""
