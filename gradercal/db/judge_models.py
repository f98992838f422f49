"""Tables of the LLM judge that the first schema did not have.

Imported at the end of :mod:`gradercal.db.models` so that ``Base.metadata`` is complete
wherever the models are used (migrations, schema checks, fingerprints).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import JSON, DateTime, String
from sqlalchemy.orm import Mapped, mapped_column

from gradercal.db.base import Base, utcnow


class JudgeCache(Base):
    """A judge reply that parsed, keyed by the hash of the exact request that produced it.

    ``key`` hashes the request body (model, messages, parameters), the server's public
    URL and the sample index (see ``JudgeClient.cache_key``); ``reply`` holds the
    completion's content, usage and log-probabilities. Identical requests, in this or a
    later run, are answered from here for free.
    """

    __tablename__ = "judge_cache"

    key: Mapped[str] = mapped_column(String(64), primary_key=True)
    model: Mapped[str] = mapped_column(String(200))
    reply: Mapped[dict[str, Any]] = mapped_column(JSON)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
