"""Alembic migrations of the gradercal schema (run automatically when a database is opened)."""
