"""studies.processes: a study's runs forked from the server that imported the libraries once, each still a process of
its own that ends as `python -m` would, and a new interpreter where a fork could not be one (another environment)."""

import contextlib
import json
import os
import signal
import subprocess
import sys
import time

import pytest
import torch

from studies.processes import ForkServer, run_command, start

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


@pytest.mark.parametrize("ending", ["exit-3", "message", "raise", "interrupt", "kill"])
def test_a_run_ends_with_the_status_and_the_output_python_m_gives(ending, tmp_path):
    status, cpu, seen, text = probe(tmp_path, ending)
    assert seen["libraries_already_imported"] is FORKED
    interpreter = subprocess.run(
        [*PROBE, ending, "an argument"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )
    expected = {"exit-3": 3, "message": 1, "raise": 1, "interrupt": -signal.SIGINT, "kill": -signal.SIGKILL}[ending]
    assert status == interpreter.returncode == expected
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
    # so too for a server not started yet: it would start with this process's environment, not the run's
    assert not ForkServer().serves([*PROBE, "normal"], {**os.environ, "PROBE_VARIABLE": "the run's own"}, set())
    monkeypatch.delenv("PROBE_VARIABLE")
    assert probe(tmp_path, "normal", "back")[2]["libraries_already_imported"] is FORKED
    # what `import deepspeed` sets in the caller is read when used, not at import: still a fork, and it has the value
    monkeypatch.setenv("PYTORCH_NVML_BASED_CUDA_CHECK", "probe")
    log = tmp_path / "nvml.log"
    assert run_command([sys.executable, "-c", "pass"], log)[0] == 0  # not `python -m`: a new interpreter, as said
    status, _, seen, _ = probe(tmp_path, "normal", "nvml")
    assert status == 0 and seen["libraries_already_imported"] is FORKED and seen["nvml"] == "probe"


def test_a_started_run_is_signalled_polled_and_waited_for_as_a_popen(tmp_path):
    """What the fault tests do with a recipe: start it with its own environment and working directory, poll it, send
    it a signal, wait for it; PYTHONPATH's folders on its path, and a variable its code reads when used kept forked."""
    (tmp_path / "code").mkdir()
    (tmp_path / "code" / "probe_on_pythonpath.py").write_text("")
    env = {**os.environ, "PYTHONPATH": str(tmp_path / "code"), "PROBE_VARIABLE": "given"}
    run = start([*PROBE, "wait"], tmp_path / "wait.log", env=env, read_when_used=["PROBE_VARIABLE"], cwd=tmp_path)
    try:
        deadline = time.monotonic() + 60
        while not (tmp_path / "wait.log").read_text().strip():  # the log is there from the start
            assert run.poll() is None and time.monotonic() < deadline
            time.sleep(0.05)
        seen = json.loads((tmp_path / "wait.log").read_text().splitlines()[0])
        assert seen["pid"] == run.pid and seen["libraries_already_imported"] is FORKED
        assert seen["variable"] == "given" and seen["on_pythonpath"] and seen["cwd"] == str(tmp_path)
        with pytest.raises(subprocess.TimeoutExpired):
            run.wait(timeout=0.2)
        assert run.poll() is None and run.returncode is None
        run.send_signal(signal.SIGTERM)
    finally:
        run.kill()
    output, _ = run.communicate(timeout=60)
    assert run.returncode == -signal.SIGTERM and output.startswith("{")  # as a Popen reports a signal's end
    assert run.poll() == -signal.SIGTERM and run.cpu_seconds() is None  # it could not say what it spent
    run.kill()  # ended already: nothing to send, as Popen
    # without saying the variable is read when used, another environment is a new interpreter's
    again = start([*PROBE, "exit-3"], tmp_path / "again.log", env=env)
    assert again.wait(timeout=120) == 3
    assert not json.loads((tmp_path / "again.log").read_text().splitlines()[0])["libraries_already_imported"]


def test_ctrl_c_reaches_a_started_run_as_it_would_reach_an_interpreter_started_here(tmp_path):
    """A caller that ignores SIGINT (a background job) starts runs that ignore it, unless asked for its default."""

    def started(name, **options):
        run = start([*PROBE, "wait"], tmp_path / f"{name}.log", **options)
        deadline = time.monotonic() + 60
        while not (tmp_path / f"{name}.log").read_text().strip():
            assert run.poll() is None and time.monotonic() < deadline
            time.sleep(0.05)
        run.send_signal(signal.SIGINT)
        with contextlib.suppress(subprocess.TimeoutExpired):
            run.wait(timeout=2)
        run.kill()
        return run.wait(timeout=60)

    assert started("here") == -signal.SIGINT  # KeyboardInterrupt, uncaught: ended by SIGINT
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)  # as a background job has it
    try:
        assert started("ignored") == -signal.SIGKILL  # it ignored Ctrl-C, so the kill ended it
        assert started("default", ctrl_c=True) == -signal.SIGINT
    finally:
        signal.signal(signal.SIGINT, previous)
