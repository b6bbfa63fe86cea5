"""Alembic environment of the grading service: run on the connection that ``grader.service.db.migrate`` passes.

There is no alembic.ini: migrations only ever run programmatically, at the
service's start, on the database of ``--db``. Imported outside Alembic (the
doctest run walks every module), this file does nothing.
"""

from alembic import context

from grader.service.db import Base


def run(config) -> None:
    connection = config.attributes.get("connection")
    if connection is None:
        raise RuntimeError("run migrations through grader.service.db.migrate(engine)")
    context.configure(connection=connection, target_metadata=Base.metadata, render_as_batch=True)
    with context.begin_transaction():
        context.run_migrations()


try:
    _config = context.config
except (AttributeError, NameError):  # not inside an Alembic command
    _config = None
if _config is not None:
    run(_config)
