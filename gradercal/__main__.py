"""``python -m gradercal``: the ``gradercal`` command."""

from gradercal.cli import run

if __name__ == "__main__":
    run()
