"""studies.processes: a study's runs forked from the server that imported the libraries once, each still a process of
its own that ends as `python -m` would, and a new interpreter where a fork could not be one (another environment)."""

import json
import os
import subprocess
import sys

import pytest
import torch

from studies.processes import run_command

PROBE = [sys.executable, "-m", "tests.studies.process_probe"]
FORKED = not torch.cuda.is_available()  # with CUDA every run is a new interpreter


def probe(tmp_path, ending: str, name: str = "run"):
    log = tmp_path / f"{name}.log"
    status, cpu = run_command([*PROBE, ending, "an argument"], log)
    text = log.read_text()
    return status, cpu, json.loads(text.splitlines()[0]), text


def without_frames(output: str) -> list[str]:
    return [line for line in output.splitlines() if not line.startswith("  ")]


def test_a_run_is_a_process_of_its_own_started_without_the_imports(tmp_path):
    status, cpu, seen, text = probe(tmp_path, "normal")
    assert status == 0 and seen["libraries_already_imported"] is FORKED
    assert seen["pid"] != os.getpid() and seen["main"] == "__main__" and seen["argv"] == ["normal", "an argument"]
    assert seen["cwd"] == os.getcwd() == seen["path0"]  # as `python -m` starts: the working directory first
    # buffered output flushed, then the atexit handlers an interpreter's exit runs
    assert text.splitlines()[1:] == ["before the end", "atexit ran"]
    assert 0.05 < cpu < 60  # its own seconds: the sum it computed, not the server's imports
    again = probe(tmp_path, "normal", "again")[2]
    assert again["pid"] != seen["pid"] and again["libraries_already_imported"] is FORKED


@pytest.mark.parametrize("ending", ["exit-3", "message", "raise", "kill"])
def test_a_run_ends_with_the_status_and_the_output_python_m_gives(ending, tmp_path):
    status, cpu, seen, text = probe(tmp_path, ending)
    assert seen["libraries_already_imported"] is FORKED
    interpreter = subprocess.run(
        [*PROBE, ending, "an argument"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )
    assert status == interpreter.returncode == {"exit-3": 3, "message": 1, "raise": 1, "kill": -9}[ending]
    # the same lines after the first (what each process saw): the message or the traceback's header and error (its
    # frames differ by the launcher's own), then the atexit handlers' output
    assert without_frames(text)[1:] == without_frames(interpreter.stdout)[1:]
    # killed, it could not say what it spent; ended any other way, it did
    assert (cpu is None) == (ending == "kill" and FORKED)


def test_another_environment_gets_a_new_interpreter_that_sees_it(tmp_path, monkeypatch):
    probe(tmp_path, "normal", "server")  # the server runs, started with this environment
    monkeypatch.setenv("PROBE_VARIABLE", "set after the server started")
    status, _, seen, _ = probe(tmp_path, "normal")
    # a library may read a variable at import: the server's imports would not have seen it
    assert status == 0 and seen["variable"] == "set after the server started"
    assert not seen["libraries_already_imported"]
    monkeypatch.delenv("PROBE_VARIABLE")
    assert probe(tmp_path, "normal", "back")[2]["libraries_already_imported"] is FORKED
    # what `import deepspeed` sets in the caller is read when used, not at import: still a fork, and it has the value
    monkeypatch.setenv("PYTORCH_NVML_BASED_CUDA_CHECK", "probe")
    log = tmp_path / "nvml.log"
    assert run_command([sys.executable, "-c", "pass"], log)[0] == 0  # not `python -m`: a new interpreter, as said
    status, _, seen, _ = probe(tmp_path, "normal", "nvml")
    assert status == 0 and seen["libraries_already_imported"] is FORKED and seen["nvml"] == "probe"
