"""Persistence for gradercal: SQLAlchemy models, sessions, Alembic migrations, repositories.

Installed as ``gradercal.db``. Never imports Qt.
"""

from __future__ import annotations

from gradercal.db.session import Database, DatabaseError, open_database, resolve_url

__all__ = ["Database", "DatabaseError", "open_database", "resolve_url"]
