"""``gradercal judge``: run the LLM judge, probe its robustness, manage its prompts and prices.

Registered lazily by :class:`gradercal.cli.LazyGroup`.
A front end: it opens the database (:mod:`gradercal.db.judging`) and drives the core
(:mod:`gradercal.judge`).

Exit status of ``judge run`` and ``judge probe``: 0 when every work item got a verdict,
3 when the run ended with items left (``--max-cost`` reached, or parse failures/errors
to retry by running the same command again), 4 when no item got a verdict (run status
``no_verdicts``: the server's replies could not be read, or every request failed), 1 on
an error (nothing more was sent), 130 when interrupted (Ctrl+C; every verdict received
so far is saved).
"""

from __future__ import annotations

import click


@click.group()
def judge() -> None:
    """The LLM judge: grade every judgment criterion through an OpenAI-compatible API.

    \b
    Examples:
      export OPENAI_API_KEY=…
      gradercal judge run --judge gpt41mini --model gpt-4.1-mini --max-cost 5
      gradercal judge run --judge local --model qwen3 --base-url http://localhost:8000/v1
      gradercal judge probe --judge gpt41mini --limit 100
      gradercal judge align --judge gpt41mini --model gpt-4.1-mini --json
      gradercal judge prompt list
    """


# the commands register themselves on the group (imported last: they import the group)
from gradercal.cli.judge import align, manage, probe, run  # noqa: E402,F401
from gradercal.cli.judge.common import EXIT_INCOMPLETE, EXIT_NO_VERDICTS, progress_bar  # noqa: E402

__all__ = ["EXIT_INCOMPLETE", "EXIT_NO_VERDICTS", "judge", "progress_bar"]
