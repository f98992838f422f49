"""``python -m gradercal.cli``: the same as the ``gradercal`` command."""

from gradercal.cli import run

run()
