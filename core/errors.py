"""One-line errors for the command-line entry points: bad input is the user's to fix, a traceback is for bugs."""

import sys

from rewards import RewardError
from rewards.sandbox import SandboxUnavailable


class UserError(Exception):
    """Missing or bad input (a file, key, column or value): reported in one line that names it."""


class DataError(UserError, ValueError):
    """Malformed user data: the entry points report it in one line, naming the file and what is wrong."""


class MissingDataFile(UserError, FileNotFoundError):
    """A local data file or folder that is not there (a FileNotFoundError, reported in one line)."""


# What the user can fix: reported as `error: <message>`. SandboxUnavailable and RewardError (a reward that raised or
# returned something other than a score per completion) come from the rewards layer, below this one, so they cannot
# subclass UserError; their messages name the cause.
ONE_LINE = (UserError, SandboxUnavailable, RewardError, FileNotFoundError, IsADirectoryError, NotADirectoryError)


def one_line_errors() -> None:
    """Entry points call this first: a UserError or a missing file ends the process with `error: <message>` on
    stderr and exit status 1, without a traceback; anything else keeps Python's traceback."""
    default = sys.excepthook

    def hook(kind, error, traceback):
        if issubclass(kind, ONE_LINE):
            close_progress_bars()
            print(f"error: {error}", file=sys.stderr)
        else:
            default(kind, error, traceback)

    sys.excepthook = hook


def close_progress_bars() -> None:
    """A progress bar still open (a trainer's, when a reward fails mid-step) is finished first, so the error starts
    its own line."""
    tqdm = sys.modules.get("tqdm")
    for bar in list(getattr(getattr(tqdm, "tqdm", None), "_instances", None) or []):
        bar.close()
