"""One-line errors for the command-line entry points: bad input is the user's to fix, a traceback is for bugs."""

import sys


class UserError(Exception):
    """Missing or bad input (a file, key, column or value): reported in one line that names it."""


def one_line_errors() -> None:
    """Entry points call this first: a UserError or a missing file ends the process with `error: <message>` on
    stderr and exit status 1, without a traceback; anything else keeps Python's traceback."""
    default = sys.excepthook

    def hook(kind, error, traceback):
        if issubclass(kind, (UserError, FileNotFoundError, IsADirectoryError, NotADirectoryError)):
            print(f"error: {error}", file=sys.stderr)
        else:
            default(kind, error, traceback)

    sys.excepthook = hook
