import json
import subprocess

from tests.conftest import REPO_ROOT

PNG = b"\x89PNG\r\n\x1a\n"


def fake_run(folder, rows):
    folder.mkdir()
    (folder / "metrics.jsonl").write_text("".join(json.dumps(row) + "\n" for row in rows))
    return folder


def grpo_rows(offset):
    return [
        {
            "step": s,
            "reward": 0.5 + offset + s / 100,
            "kl": s / 1000,
            "completions/mean_length": 50 + s,
            "completions/clipped_ratio": 0.0,
            "learning_rate": 5e-4,
        }
        for s in range(1, 21)
    ]


def test_make_plot_one_run_and_two_overlaid(tmp_path):
    grpo = fake_run(tmp_path / "grpo-run", grpo_rows(0.0))
    dpo = fake_run(
        tmp_path / "dpo-run", [{"step": s, "rewards/margins": s / 50, "learning_rate": 1e-4} for s in range(1, 11)]
    )
    one = subprocess.run(["make", "plot", f"RUN={grpo}"], cwd=REPO_ROOT, capture_output=True, text=True)
    assert one.returncode == 0, one.stderr
    assert (grpo / "metrics.png").read_bytes()[:8] == PNG and f"wrote {grpo / 'metrics.png'}" in one.stdout
    two = subprocess.run(["make", "plot", f"RUN={grpo} {dpo}"], cwd=REPO_ROOT, capture_output=True, text=True)
    assert two.returncode == 0, two.stderr
    overlay = tmp_path / "metrics-overlay.png"
    assert overlay.read_bytes()[:8] == PNG and overlay.stat().st_size > (grpo / "metrics.png").stat().st_size / 2


def test_plot_of_a_folder_without_metrics_is_a_one_line_error(tmp_path):
    result = subprocess.run(["make", "plot", f"RUN={tmp_path}"], cwd=REPO_ROOT, capture_output=True, text=True)
    assert result.returncode != 0 and "Traceback" not in result.stderr
    assert f"error: {tmp_path}: no metrics.jsonl here" in result.stderr


def test_each_reward_gets_its_own_curve_beside_the_total(tmp_path):
    import struct

    from core.report.plots import plot_runs

    def panels(png) -> int:  # 2.6 inches of height per panel at 110 dpi, from the PNG's header
        return round(struct.unpack(">I", png.read_bytes()[20:24])[0] / (2.6 * 110))

    rows = [{"step": s, "reward": 0.4 + s / 100, "learning_rate": 5e-4} for s in range(1, 11)]
    total_only = plot_runs([fake_run(tmp_path / "one", rows)], tmp_path / "one.png")
    each = [{**r, "rewards/math_accuracy/mean": 0.4, "rewards/names_unit/mean": r["step"] / 10} for r in rows]
    with_each = plot_runs([fake_run(tmp_path / "two", each)], tmp_path / "two.png")
    assert panels(total_only) == 2 and panels(with_each) == 3
