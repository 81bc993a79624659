"""The code sandbox against hostile programs, behind an outer guard, as root and as an ordinary user.

Each hostile run happens in its own PID namespace (`unshare -p -f --mount-proc`): if the sandbox leaked a
`kill(-1)` or a fork bomb, it would take down that namespace and fail these tests, not the machine. The guard
builds a fake user's home and checkout there and runs the suite as root (sandbox mode `root`) and as an
unprivileged uid (`userns`); see tests/rewards/hostile_programs.py.
"""

import json
import os
import subprocess
import sys
import textwrap
from concurrent.futures import ThreadPoolExecutor

import pytest

from rewards.sandbox import Limits, Sandbox
from tests.conftest import REPO_ROOT, start_command
from tests.rewards.hostile_programs import CASES, FAKE_HOME, FILE_ATTACKS, REMOUNT_CHECK, SECRET, SYSTEM_PYTHON

MODES = {"root": "root", "user": "userns"}


def guarded_run(mode: str, out) -> dict:
    command = [
        "unshare",
        "--pid",
        "--fork",
        "--mount-proc",
        SYSTEM_PYTHON,
        "tests/rewards/hostile_programs.py",
        "guard",
        mode,
        str(out),
    ]
    proc = subprocess.run(command, cwd=REPO_ROOT, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0 and out.exists(), f"guarded run died: rc={proc.returncode}\n{proc.stderr[-3000:]}"
    report = json.loads(out.read_text())
    assert report["suite_returncode"] == 0, report["suite_stderr"]
    return report


@pytest.fixture(scope="module", params=sorted(MODES))
def hostile_report(request, tmp_path_factory):
    return guarded_run(request.param, tmp_path_factory.mktemp("hostile") / f"{request.param}.json")


@pytest.mark.slow
def test_the_file_attacks_work_without_isolation(tmp_path):
    # The same attacks, same fake user, REWARDS_SANDBOX=unisolated: each one succeeds and shows in its score and
    # in the files, so a 0 under isolation means the sandbox stopped it, not that the attack was broken.
    report = guarded_run("user-unisolated", tmp_path / "unisolated.json")
    assert report["isolation"] == "unisolated"
    assert report["scores"] == {name: 1.0 for name in FILE_ATTACKS}
    home, checkout = "/home/rl-user", "/mnt/checkout"
    for changed in (
        f"{checkout}/README.md",
        f"{checkout}/rewards/code.py",
        f"{home}/pwned.txt",
        f"{home}/.bashrc",
        f"{home}/.cache/huggingface/token",
        f"{home}/.ssh",
        "/mnt/work/pwned.txt",
    ):
        assert changed in report["changed_files"]


@pytest.mark.slow
def test_each_run_uses_the_mode_its_user_gets(hostile_report):
    assert hostile_report["isolation"] == MODES[hostile_report["mode"]]
    assert (hostile_report["uid"] == 0) == (hostile_report["mode"] == "root")


@pytest.mark.slow
@pytest.mark.parametrize("case", sorted(CASES))
def test_hostile_program_scores_only_what_it_earned(hostile_report, case):
    assert hostile_report["scores"][case] == hostile_report["expected"][case]


@pytest.mark.slow
def test_pre_5_12_kernels_read_only_remount_holds_too(hostile_report):
    assert hostile_report["remount_scores"] == {name: hostile_report["expected"][name] for name in REMOUNT_CHECK}


def test_at_least_25_hostile_programs():
    assert len(CASES) - 1 >= 25


@pytest.mark.slow
def test_nothing_left_behind_and_nothing_escaped(hostile_report):
    assert hostile_report["leftover_processes"] == []
    assert hostile_report["leftover_tmp"] == []
    assert hostile_report["escaped_files"] == []
    assert hostile_report["connections"] == 0
    assert hostile_report["pool_still_works"] == "ok 1/1"


@pytest.mark.slow
def test_the_users_files_are_unchanged(hostile_report):
    # names, modes, owners, sizes, mtimes, ctimes and contents of the home, the checkout and the working directory
    assert hostile_report["files_checked"] >= len(FAKE_HOME) + 10
    assert hostile_report["changed_files"] == []


def test_outputs_are_captured_capped_and_secret_free():
    sandbox = Sandbox(Limits(timeout=5))
    result = sandbox.run(
        "import os, sys\nprint(dict(os.environ))\nsys.stdout.write('y' * 10**6)\ndef f():\n    return 1",
        ["assert f() == 1"],
    )
    assert result.passed == 1 and result.status == "ok"
    assert SECRET not in result.stdout and "HF_TOKEN" not in result.stdout
    assert len(result.stdout) <= 4096


def test_timeout_is_reported_and_kills_the_run():
    result = Sandbox(Limits(timeout=1)).run("import time\ntime.sleep(30)", ["assert True"])
    assert result.status == "timeout" and result.passed == 0


def test_network_is_cut():
    # A fresh network namespace: loopback only, and nothing of the host's listens there.
    result = Sandbox().run(
        "import socket\ndef interfaces():\n    return [name for _, name in socket.if_nameindex()]",
        ["assert interfaces() == ['lo']"],
    )
    assert result.passed == 1, result


def test_isolation_level_is_full_namespaces_here():
    # CI and the dev machines run as root with unshare: anything weaker is a regression here.
    assert Sandbox().isolation == "root"


CODE_TESTS_IN_A_FRESH_PROCESS = textwrap.dedent("""
    import os, sys, warnings
    warnings.simplefilter("default")
    from rewards import REWARDS
    marker = sys.argv[1]
    program = f"open({marker!r}, 'w').write('ran')\\ndef f():\\n    return 1"
    print(REWARDS["code_tests"]([program], tests=[["assert f() == 1"]]))
""")


def run_code_tests(tmp_path, path_dirs: list[str], **env):
    marker = tmp_path / "program-ran"
    result = subprocess.run(
        [sys.executable, "-c", CODE_TESTS_IN_A_FRESH_PROCESS, str(marker)],
        cwd=REPO_ROOT,
        env={"PATH": os.pathsep.join(path_dirs), "HOME": str(tmp_path), **env},
        capture_output=True,
        text=True,
        timeout=120,
    )
    return result, marker.exists()


def fake_unshare(tmp_path, script: str) -> str:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "unshare").write_text(script)
    (bin_dir / "unshare").chmod(0o755)
    return str(bin_dir)


def test_refuses_before_running_anything_without_unshare(tmp_path):
    result, ran = run_code_tests(tmp_path, [str(tmp_path)])
    assert result.returncode != 0 and not ran
    message = result.stderr.strip().splitlines()[-1]
    assert (
        message.startswith("rewards.sandbox.SandboxUnavailable: ")
        and "`unshare` (util-linux) is not on PATH" in message
    )
    for fix in ("kernel.apparmor_restrict_unprivileged_userns=0", "run as root", "REWARDS_SANDBOX=unisolated"):
        assert fix in message


def test_refuses_where_the_kernel_denies_namespaces(tmp_path):
    # What util-linux prints where user namespaces are disabled (e.g. Ubuntu 24.04's AppArmor restriction).
    bin_dir = fake_unshare(
        tmp_path, "#!/bin/sh\necho 'unshare: unshare failed: Operation not permitted' >&2\nexit 1\n"
    )
    result, ran = run_code_tests(tmp_path, [bin_dir, "/usr/bin", "/bin"])
    assert result.returncode != 0 and not ran
    assert "creating Linux namespaces failed" in result.stderr and "Operation not permitted" in result.stderr
    assert "REWARDS_SANDBOX=unisolated" in result.stderr


def test_explicit_opt_in_runs_unisolated_with_a_warning(tmp_path):
    result, ran = run_code_tests(tmp_path, [str(tmp_path)], REWARDS_SANDBOX="unisolated")
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[1.0]" and ran  # really unisolated: it wrote to the caller's directory
    assert (
        "RuntimeWarning: rewards.sandbox: REWARDS_SANDBOX=unisolated: untrusted programs run with your uid"
        in result.stderr
    )


def test_a_misspelt_opt_in_is_an_error(tmp_path):
    result, ran = run_code_tests(tmp_path, [str(tmp_path)], REWARDS_SANDBOX="none")
    assert result.returncode != 0 and not ran and "REWARDS_SANDBOX='none'" in result.stderr


def test_the_users_directories_are_hidden_and_the_tree_is_read_only():
    sandbox = Sandbox()
    checkout, cwd, home = str(REPO_ROOT), os.getcwd(), os.path.expanduser("~")
    # hidden = empty, or not there at all (a checkout under /tmp lies under the program's own fresh /tmp)
    program = (
        "import os\ndef listing(path):\n    return os.listdir(path) if os.path.exists(path) else []\n"
        "def write(path):\n"
        "    open(path, 'w').write('x')\n    return True"
    )
    tests = [
        f"assert listing({checkout!r}) == []",
        f"assert listing({cwd!r}) == []",
        f"assert listing({home!r}) == []",
        "assert listing('/root') == [] and listing('/home') == []",
        "assert write('/tmp/ok')",
        "assert not os.access('/etc', os.W_OK) and not os.access('/usr', os.W_OK)",
    ]
    assert sandbox.run(program, tests).passed == len(tests)


def code_reward_recipe(recipe: str, *out: str) -> list[str]:
    """A recipe's command with the code reward and a model that does not exist."""
    config = f"recipes/configs/tiny/{recipe}.yaml"
    return ["-m", f"recipes.{recipe}", "--config", config, "--reward_funcs", "code_tests"] + [
        "--model_name_or_path",
        "no/such-model",
        *out,
    ]


EVAL = ["-m", "eval.run", "--data", "tests/fixtures/mbpp_sample.jsonl", "--model", "no/such-model", "--out", "RUN"]
PREFLIGHT_COMMANDS = {
    "grpo": code_reward_recipe("grpo", "--output_dir", "RUN"),
    "ppo": code_reward_recipe("ppo", "--output_dir", "RUN"),
    "pairs": code_reward_recipe("pairs", "--output", "RUN/pairs.jsonl"),
    "eval": [*EVAL, "--task", "mbpp"],
    "eval-rewards": [*EVAL, "--rewards", "code_tests", "--prompt_column", "text"],
}


@pytest.fixture(scope="module")
def preflight_refusals(tmp_path_factory):
    """Each command with no unshare on PATH and a model that does not exist, two at a time: {name: (result, with its
    output, stdout and stderr together, as both; its run folder)}."""
    bin_dir = tmp_path_factory.mktemp("bin")
    (bin_dir / "python").symlink_to(sys.executable)

    def run(name):
        folder = tmp_path_factory.mktemp(name)
        command = [part.replace("RUN", str(folder / "run")) for part in PREFLIGHT_COMMANDS[name]]
        # forked (tests/conftest.py): PATH, which the preflight reads when it looks for unshare, is its own
        started = start_command([sys.executable, *command], env={"PATH": str(bin_dir)})
        output, _ = started.communicate(timeout=300)
        return name, (subprocess.CompletedProcess(started.args, started.returncode, output, output), folder / "run")

    with ThreadPoolExecutor(max_workers=2) as pool:
        return dict(pool.map(run, PREFLIGHT_COMMANDS))


@pytest.mark.slow
@pytest.mark.parametrize("name", PREFLIGHT_COMMANDS)
def test_recipes_and_eval_refuse_in_their_preflight(preflight_refusals, name):
    # The sandbox message, not a model-loading error.
    result, run = preflight_refusals[name]
    assert result.returncode == 1, result.stderr[-2000:]
    assert (
        result.stderr.strip()
        .splitlines()[-1]
        .startswith("rewards.sandbox: cannot isolate untrusted code: `unshare` (util-linux) is not on PATH")
    )
    assert "Traceback" not in result.stderr and not run.exists()
