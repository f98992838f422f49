"""Token prices per model, for the cost of a judge run and ``--max-cost``.

gradercal ships :data:`DEFAULT_PRICES` (USD per million tokens, list prices of the
public APIs as of mid-2025 — check your provider's). Users override or extend them in
``prices.json`` in the user config directory (``gradercal judge prices --init`` writes
it; ``$GRADERCAL_PRICES`` points elsewhere)::

    {"gpt-4.1-mini": {"input": 0.40, "output": 1.60},
     "my-vllm-model": {"input": 0, "output": 0}}

A model is priced by its exact name, else by the longest known name it starts with
(``gpt-4o-2024-08-06`` → ``gpt-4o``), after dropping a ``provider/`` prefix.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from platformdirs import user_config_dir

from gradercal.errors import GradercalError

ENV_VAR = "GRADERCAL_PRICES"


@dataclass(frozen=True)
class Price:
    """USD per million input (prompt) and output (completion) tokens."""

    input: float
    output: float

    def cost(self, prompt_tokens: int, completion_tokens: int) -> float:
        return (prompt_tokens * self.input + completion_tokens * self.output) / 1e6


DEFAULT_PRICES: Mapping[str, Price] = {
    "gpt-4o": Price(2.50, 10.00),
    "gpt-4o-mini": Price(0.15, 0.60),
    "gpt-4.1": Price(2.00, 8.00),
    "gpt-4.1-mini": Price(0.40, 1.60),
    "gpt-4.1-nano": Price(0.10, 0.40),
    "gpt-5": Price(1.25, 10.00),
    "gpt-5-mini": Price(0.25, 2.00),
    "gpt-5-nano": Price(0.05, 0.40),
    "o3": Price(2.00, 8.00),
    "o3-mini": Price(1.10, 4.40),
    "o4-mini": Price(1.10, 4.40),
    "claude-sonnet-4": Price(3.00, 15.00),
    "claude-opus-4": Price(15.00, 75.00),
    "claude-3-5-haiku": Price(0.80, 4.00),
    "gemini-2.5-pro": Price(1.25, 10.00),
    "gemini-2.5-flash": Price(0.30, 2.50),
}


def prices_path() -> Path:
    """Where the user's price table lives."""
    env = os.environ.get(ENV_VAR)
    if env:
        return Path(env).expanduser()
    return Path(user_config_dir("gradercal", appauthor=False)) / "prices.json"


def load_prices(path: Path | None = None) -> dict[str, Price]:
    """The shipped prices updated with the user's file (if it exists)."""
    table = dict(DEFAULT_PRICES)
    path = path or prices_path()
    if not path.is_file():
        return table
    try:
        raw = json.loads(path.read_text("utf-8"))
    except (OSError, ValueError) as exc:
        raise GradercalError(f"{path}: not a readable JSON price table ({exc})") from exc
    if not isinstance(raw, dict):
        raise GradercalError(f"{path}: must be an object mapping model names to prices")
    for model, value in raw.items():
        if (
            not isinstance(value, dict)
            or not all(isinstance(value.get(k), int | float) for k in ("input", "output"))
            or min(value["input"], value["output"]) < 0
        ):
            raise GradercalError(
                f'{path}: {model}: expected {{"input": USD, "output": USD}} per million tokens'
            )
        table[str(model)] = Price(float(value["input"]), float(value["output"]))
    return table


def write_prices(path: Path, table: Mapping[str, Price]) -> None:
    """Write ``table`` as an editable JSON price file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    data = {m: {"input": p.input, "output": p.output} for m, p in sorted(table.items())}
    path.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")


def price_for(model: str, table: Mapping[str, Price]) -> Price | None:
    """The price of ``model``: exact name, else the longest known prefix; None if unknown."""
    if model in table:
        return table[model]
    name = model.split("/", 1)[1] if "/" in model else model
    if name in table:
        return table[name]
    best = max((k for k in table if name.startswith(k)), key=len, default=None)
    return table[best] if best is not None else None
