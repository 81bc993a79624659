import subprocess

from core.runs.provenance import REPO, code_digest, commit, cpu


def test_commit_is_the_checked_out_one_and_none_outside_a_checkout(tmp_path):
    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=REPO, capture_output=True, text=True).stdout.strip()
    assert commit().removesuffix("+changes") == head
    assert commit(tmp_path) is None


def test_a_changed_result_is_not_a_change_to_the_code_that_ran(tmp_path):
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@t", "-C", str(tmp_path)]
    subprocess.run([*git, "init", "-q"], check=True)
    (tmp_path / "results").mkdir()
    (tmp_path / "results" / "elapsed.json").write_text("{}\n")
    (tmp_path / "run.py").write_text("x = 1\n")
    subprocess.run([*git, "add", "."], check=True)
    subprocess.run([*git, "commit", "-qm", "start"], check=True)
    head = subprocess.run([*git, "rev-parse", "HEAD"], capture_output=True, text=True).stdout.strip()
    (tmp_path / "results" / "elapsed.json").write_text('{"seconds": 1}\n')  # what a run writes as it goes
    assert commit(tmp_path) == head
    (tmp_path / "run.py").write_text("x = 2\n")
    assert commit(tmp_path) == head + "+changes"


def test_cpu_names_the_model_and_only_the_kernel_flags(tmp_path):
    info = tmp_path / "cpuinfo"
    info.write_text(
        "processor\t: 0\nmodel name\t: Test CPU 9000\nflags\t\t: fpu sse2 avx2 avx512f avx512_bf16 amx_bf16\n"
        "processor\t: 1\nmodel name\t: Test CPU 9000\nflags\t\t: fpu\n"
    )
    assert cpu(info) == {"cpu": "Test CPU 9000", "kernel_flags": ["avx2", "avx512f", "avx512_bf16", "amx_bf16"]}
    assert cpu(tmp_path / "absent")["kernel_flags"] == []


def test_the_code_digest_changes_with_any_code_or_config_byte_and_nothing_else(tmp_path):
    (tmp_path / "core").mkdir()
    (tmp_path / "core" / "a.py").write_text("x = 1\n")
    (tmp_path / "core" / "b.yaml").write_text("k: 1\n")
    first = code_digest(tmp_path, ("core",))
    (tmp_path / "core" / "notes.txt").write_text("not code")
    assert code_digest(tmp_path, ("core",)) == first
    (tmp_path / "core" / "b.yaml").write_text("k: 2\n")
    assert code_digest(tmp_path, ("core",)) != first
