"""core.runs.storage: what the next command reads is written whole or not at all, and a failed write is one line."""

import os
import signal
import subprocess
import sys

import pytest

from core.runs.storage import WriteFailed, describe_failure, write_text_whole, writing
from tests.conftest import REPO_ROOT


def test_a_kill_in_the_middle_of_a_write_leaves_no_file_and_an_old_one_untouched(tmp_path):
    """A process killed while writing results.json: neither a truncated file nor a changed old one is left."""
    target = tmp_path / "results.json"
    target.write_text('{"old": true}\n')
    killed_mid_write = (
        "import os, signal, sys\n"
        "from core.runs.storage import write_whole\n"
        "def half(path):\n"
        "    with open(path, 'w') as fh:\n"
        "        fh.write('{\"accuracy\": 0.')\n"
        "        fh.flush()\n"
        "        os.kill(os.getpid(), signal.SIGKILL)\n"
        f"write_whole({str(target)!r}, half)\n"
    )
    result = subprocess.run([sys.executable, "-c", killed_mid_write], cwd=REPO_ROOT, capture_output=True)
    assert result.returncode == -signal.SIGKILL
    assert target.read_text() == '{"old": true}\n'
    fresh = tmp_path / "fresh" / "results.json"
    result = subprocess.run(
        [sys.executable, "-c", killed_mid_write.replace(str(target), str(fresh))], cwd=REPO_ROOT, capture_output=True
    )
    assert not fresh.exists()  # what is left is a hidden partial name, never the name the next command reads
    assert [p.name.startswith(".results.json.partial-") for p in fresh.parent.iterdir()] == [True]


def test_a_write_to_a_full_filesystem_is_one_line_with_the_free_space(tmp_path):
    disk = tmp_path / "disk"
    disk.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(disk)], check=True)
    try:
        (disk / "results.json").write_text("kept\n")
        with pytest.raises(WriteFailed) as failure:
            write_text_whole(disk / "results.json", "x" * 200_000)
        message = str(failure.value)
        assert message.startswith(f"could not write results.json in {disk}: No space left on device (")
        assert "MB free there); " in message and f"{disk / 'results.json'} was left as it was" in message
        assert (disk / "results.json").read_text() == "kept\n" and os.listdir(disk) == ["results.json"]
    finally:
        subprocess.run(["umount", "-l", str(disk)], check=True)


def test_torch_s_full_disk_error_is_named_a_write_failure(tmp_path):
    error = RuntimeError("[enforce fail at inline_container.cc:672] . unexpected pos 60928 vs 60816")
    assert describe_failure(error, "checkpoint-3", tmp_path).startswith(
        f"could not write checkpoint-3 in {tmp_path}: the file could not be written out (torch: [enforce fail"
    )
    with pytest.raises(ValueError, match="not a write"), writing("x", tmp_path):
        raise ValueError("not a write failure: raised as it is")
