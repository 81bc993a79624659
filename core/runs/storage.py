"""Writing what runs, `make pairs` and `make eval` produce: a failed write (a full disk, a quota, a read-only folder)
ends in one line naming the folder, its free space and what was being written, and files that the next command reads
are written whole or not at all (a temporary name, renamed when complete)."""

import os
import shutil
from contextlib import contextmanager
from pathlib import Path

from core.errors import UserError

# What the serializers raise when the disk fills under them, not as an OSError: torch ("[enforce fail at
# inline_container.cc:...] . unexpected pos N vs M", "PytorchStreamWriter failed writing file ..."), safetensors
# (SafetensorError "Error while serializing: I/O error: No space left on device (os error 28)").
SERIALIZER_WRITE_FAILURES = ("inline_container", "PytorchStreamWriter", "file write failed", "Error while serializing")
OS_REASONS = ("No space left on device", "Disk quota exceeded", "Read-only file system")


class WriteFailed(UserError):
    """A file could not be written: reported in one line, with the folder's free space."""


def is_write_failure(error: BaseException) -> bool:
    if isinstance(error, OSError):
        return not isinstance(error, FileNotFoundError | IsADirectoryError | NotADirectoryError)
    return isinstance(error, Exception) and any(text in str(error) for text in SERIALIZER_WRITE_FAILURES)


def free_mb(folder: str | Path) -> float | None:
    """Free megabytes on the filesystem of `folder` (or of its nearest existing parent)."""
    path = Path(folder).absolute()
    while not path.exists() and path != path.parent:
        path = path.parent
    try:
        return shutil.disk_usage(path).free / 2**20
    except OSError:
        return None


def describe_failure(error: BaseException, what: str, folder: str | Path) -> str:
    """'could not write WHAT in FOLDER: No space left on device (0.0 MB free there)'."""
    if isinstance(error, OSError) and error.errno is not None:
        reason = os.strerror(error.errno)
    elif any(text in str(error) for text in OS_REASONS):
        reason = next(text for text in OS_REASONS if text in str(error))
    elif "unexpected pos" in str(error) or "file write failed" in str(error):
        reason = "the file could not be written out (torch: " + str(error).strip().splitlines()[0][:80] + ")"
    else:
        reason = str(error).strip().splitlines()[0][:120]
    free = free_mb(folder)
    space = f" ({free:.1f} MB free there)" if free is not None else ""
    return f"could not write {what} in {folder}: {reason}{space}"


@contextmanager
def writing(what: str, folder: str | Path, after: str = ""):
    """A write failure inside the block becomes a WriteFailed naming `what`, the folder, its free space, and `after`
    (what was done about it, what to do next)."""
    try:
        yield
    except BaseException as error:
        if is_write_failure(error):
            raise WriteFailed(describe_failure(error, what, folder) + (f"; {after}" if after else "")) from error
        raise


def write_whole(path: str | Path, write) -> Path:
    """Calls `write(temporary_path)`, then renames the result to `path`: a reader never sees half a file, and a
    failed write leaves `path` as it was (a WriteFailed naming it)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(f".{path.name}.partial-{os.getpid()}")
    try:
        with writing(path.name, path.parent, f"{path} was left as it was; free some space and run it again"):
            write(partial)
            os.replace(partial, path)
    finally:
        partial.unlink(missing_ok=True)
    return path


def write_text_whole(path: str | Path, text: str) -> Path:
    return write_whole(path, lambda partial: Path(partial).write_text(text))
