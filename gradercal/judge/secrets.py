"""The judge's API key: read from an environment variable or the system keyring, never kept.

The key lives only in memory, in the client that sends it. It is never written to the
database, logs, exports or messages: :class:`Redactor` removes it from every text the
judge stores or shows (error messages, raw replies of a server that echoes it).
"""

from __future__ import annotations

import importlib
import os
from dataclasses import dataclass
from urllib.parse import urlsplit, urlunsplit

#: Environment variable read when none is named.
DEFAULT_KEY_ENV = "OPENAI_API_KEY"
#: Keyring service under which ``gradercal judge`` looks keys up (user name: the variable).
KEYRING_SERVICE = "gradercal"
#: Every secret is redacted, whatever its length: a short key blanks the words that hold
#: it, which is the right trade (a leaked key costs more than a garbled log line).
MIN_SECRET_LENGTH = 1
REDACTED = "[REDACTED]"


@dataclass(frozen=True)
class ApiKey:
    """A key and where it came from (``env``, ``keyring`` or ``none``). ``repr`` hides it."""

    value: str | None
    source: str
    env_var: str

    def __repr__(self) -> str:
        return f"ApiKey(source={self.source!r}, env_var={self.env_var!r})"

    __str__ = __repr__


def resolve_api_key(env_var: str = DEFAULT_KEY_ENV) -> ApiKey:
    """The key from ``$env_var``, else from the keyring (if the keyring package is installed).

    Returns an :class:`ApiKey` whose ``value`` is None when neither has one (local
    servers such as vLLM or Ollama need no key).
    """
    value = os.environ.get(env_var)
    if value:
        return ApiKey(value, "env", env_var)
    try:
        keyring = importlib.import_module("keyring")
        stored = keyring.get_password(KEYRING_SERVICE, env_var)
    except Exception:  # keyring absent, or no usable backend
        stored = None
    if stored:
        return ApiKey(str(stored), "keyring", env_var)
    return ApiKey(None, "none", env_var)


class Redactor:
    """Removes secrets from text before it is stored, logged or shown."""

    def __init__(self, *secrets: str | None) -> None:
        self._secrets = sorted(
            {s for s in secrets if s and len(s) >= MIN_SECRET_LENGTH}, key=len, reverse=True
        )

    def __call__(self, text: str) -> str:
        for secret in self._secrets:
            if secret in text:
                text = text.replace(secret, REDACTED)
        return text

    def deep(self, value: object) -> object:
        """``value`` with every string inside (dict keys and values, lists) redacted."""
        if not self._secrets:
            return value
        if isinstance(value, str):
            return self(value)
        if isinstance(value, dict):
            return {self.deep(k): self.deep(v) for k, v in value.items()}
        if isinstance(value, list | tuple):
            return [self.deep(v) for v in value]
        return value


def public_url(url: str | None) -> str | None:
    """``url`` without user name, password or query string (which may carry keys)."""
    if url is None:
        return None
    parts = urlsplit(url)
    host = parts.hostname or ""
    if parts.port is not None:
        host = f"{host}:{parts.port}"
    return urlunsplit((parts.scheme, host, parts.path, "", ""))
