"""The code sandbox against hostile programs, behind an outer guard.

All hostile programs run in one child process inside its own PID namespace (`unshare -p -f --mount-proc`): if the
sandbox leaked a `kill(-1)` or a fork bomb, it would take down that namespace and fail these tests, not the machine.
"""

import json
import subprocess
import sys

import pytest

from rewards.sandbox import Limits, Sandbox
from tests.conftest import REPO_ROOT
from tests.hostile_programs import CASES, SECRET


@pytest.fixture(scope="module")
def hostile_report(tmp_path_factory):
    out = tmp_path_factory.mktemp("hostile") / "report.json"
    command = ["unshare", "--pid", "--fork", "--mount-proc", sys.executable, "tests/hostile_programs.py", str(out)]
    proc = subprocess.run(command, cwd=REPO_ROOT, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0 and out.exists(), f"guarded run died: rc={proc.returncode}\n{proc.stderr[-3000:]}"
    return json.loads(out.read_text())


@pytest.mark.parametrize("case", sorted(CASES))
def test_hostile_program_scores_only_what_it_earned(hostile_report, case):
    assert hostile_report["scores"][case] == hostile_report["expected"][case]


def test_at_least_25_hostile_programs():
    assert len(CASES) - 1 >= 25


def test_nothing_left_behind_and_nothing_escaped(hostile_report):
    assert hostile_report["leftover_processes"] == []
    assert hostile_report["leftover_tmp"] == []
    assert hostile_report["escaped_files"] == []
    assert hostile_report["connections"] == 0
    assert hostile_report["pool_still_works"] == "ok 1/1"


def test_outputs_are_captured_capped_and_secret_free():
    sandbox = Sandbox(Limits(timeout=5))
    result = sandbox.run("import os, sys\nprint(dict(os.environ))\nsys.stdout.write('y' * 10**6)\n"
                         "def f():\n    return 1", ["assert f() == 1"])
    assert result.passed == 1 and result.status == "ok"
    assert SECRET not in result.stdout and "HF_TOKEN" not in result.stdout
    assert len(result.stdout) <= 4096


def test_timeout_is_reported_and_kills_the_run():
    result = Sandbox(Limits(timeout=1)).run("import time\ntime.sleep(30)", ["assert True"])
    assert result.status == "timeout" and result.passed == 0


def test_network_is_cut():
    # A fresh network namespace: loopback only, and nothing of the host's listens there.
    result = Sandbox().run("import socket\ndef interfaces():\n    return [name for _, name in socket.if_nameindex()]",
                           ["assert interfaces() == ['lo']"])
    assert result.passed == 1, result


def test_isolation_level_is_full_namespaces_here():
    # CI and the dev machines run as root with unshare: anything weaker is a regression here.
    assert Sandbox().isolation == "root"
