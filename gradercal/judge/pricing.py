"""Token prices per model, for the cost of a judge run and ``--max-cost``.

gradercal ships :data:`DEFAULT_PRICES` (USD per million tokens, list prices of the
public APIs as of mid-2025 — check your provider's). Users override or extend them in
``prices.json`` in the user config directory (``gradercal judge prices --init`` writes
it; ``$GRADERCAL_PRICES`` points elsewhere)::

    {"gpt-4.1-mini": {"input": 0.40, "output": 1.60},
     "my-vllm-model": {"input": 0, "output": 0},
     "my-batch-model": {"input": 1.0, "output": 4.0, "batch_input": 0.4, "batch_output": 1.6}}

``batch_input``/``batch_output`` are the prices of a request sent through the Batch API
(``gradercal judge run --batch``); when a model has none, half its online price (the
Batch API's discount at OpenAI) is assumed.

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


#: Share of the online price a Batch API request costs when no batch price is given.
BATCH_DISCOUNT = 0.5


@dataclass(frozen=True)
class Price:
    """USD per million input (prompt) and output (completion) tokens.

    ``batch_input``/``batch_output``: the same through the Batch API (None: the online
    price times :data:`BATCH_DISCOUNT`).
    """

    input: float
    output: float
    batch_input: float | None = None
    batch_output: float | None = None

    def cost(self, prompt_tokens: int, completion_tokens: int) -> float:
        return (prompt_tokens * self.input + completion_tokens * self.output) / 1e6

    def batch(self) -> Price:
        """The price of a Batch API request, as an online :class:`Price` (its ``cost``)."""
        bi = self.input * BATCH_DISCOUNT if self.batch_input is None else self.batch_input
        bo = self.output * BATCH_DISCOUNT if self.batch_output is None else self.batch_output
        return Price(bi, bo, bi, bo)

    def to_dict(self) -> dict[str, float]:
        """``input``, ``output`` and the batch prices in effect (USD per million tokens)."""
        b = self.batch()
        return {"input": self.input, "output": self.output,
                "batch_input": b.input, "batch_output": b.output}  # fmt: skip


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
            or not all(_usd(value.get(k)) for k in ("input", "output"))
            or not all(value.get(k) is None or _usd(value[k]) for k in _BATCH_KEYS)
        ):
            raise GradercalError(
                f'{path}: {model}: expected {{"input": USD, "output": USD}} per million tokens '
                '(optionally "batch_input" and "batch_output": USD, each ≥ 0)'
            )
        batch = [None if value.get(k) is None else float(value[k]) for k in _BATCH_KEYS]
        table[str(model)] = Price(float(value["input"]), float(value["output"]), *batch)
    return table


_BATCH_KEYS = ("batch_input", "batch_output")


def _usd(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and value >= 0


def write_prices(path: Path, table: Mapping[str, Price]) -> None:
    """Write ``table`` as an editable JSON price file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    data: dict[str, dict[str, float]] = {}
    for model, p in sorted(table.items()):
        data[model] = {"input": p.input, "output": p.output}
        if p.batch_input is not None:
            data[model]["batch_input"] = p.batch_input
        if p.batch_output is not None:
            data[model]["batch_output"] = p.batch_output
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
