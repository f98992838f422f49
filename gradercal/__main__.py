"""``python -m gradercal``: the ``gradercal`` command."""

from gradercal.cli import main

if __name__ == "__main__":
    main(prog_name="gradercal")
