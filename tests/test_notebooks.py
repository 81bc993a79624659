"""Notebooks are executed top to bottom, as a user would run them."""

import nbformat
import pytest
from nbclient import NotebookClient

from tests.conftest import REPO_ROOT


def execute(name: str):
    notebook = nbformat.read(REPO_ROOT / "notebooks" / name, as_version=4)
    NotebookClient(
        notebook, timeout=120, kernel_name="python3", resources={"metadata": {"path": str(REPO_ROOT / "notebooks")}}
    ).execute()
    return notebook


def outputs(notebook) -> str:
    return "\n".join(
        out.get("text", "") + str(out.get("data", {}).get("text/plain", ""))
        for cell in notebook.cells
        if cell.cell_type == "code"
        for out in cell.get("outputs", [])
    )


def test_rewards_playground_runs_and_shows_scores_and_failures():
    text = outputs(execute("rewards.ipynb"))
    assert "'math_accuracy'" in text and "shows_work" in text
    assert "math_accuracy: mean" in text
    # the wrong carry (#1), the unparseable answer (#5) and the hostile expression (#7) are reported with reasons
    assert "#1: wrong" in text and "#5: unparseable answer" in text and "#7:" in text


@pytest.mark.slow
def test_comparison_notebook_shows_the_table_and_verdicts(compare_results, monkeypatch):
    monkeypatch.setenv("COMPARE_DIR", str(compare_results))
    notebook = execute("comparison.ipynb")
    text = outputs(notebook)
    assert "profile tiny: 16 training prompts per method" in text
    for method in ("grpo", "ppo", "dpo", "orpo"):
        assert f"{method:>5}  sampled:" in text and f"{method:>5}   greedy:" in text and f"{method:>5}: peak" in text
    assert "PPO - GRPO peak:" in text
    images = [
        out
        for cell in notebook.cells
        if cell.cell_type == "code"
        for out in cell.get("outputs", [])
        if "image/png" in out.get("data", {})
    ]
    assert len(images) == 4  # memory, accuracy, rewards, and accuracy against compute


@pytest.mark.slow
def test_comparison_notebook_reads_the_code_comparison_too(code_compare_results, monkeypatch):
    monkeypatch.setenv("COMPARE_DIR", str(code_compare_results))
    text = outputs(execute("comparison.ipynb"))
    assert "profile tiny-code: 16 training prompts per method" in text
    assert all(f"{method:>5}  sampled:" in text for method in ("grpo", "dpo"))  # the methods it ran
    assert "  ppo  sampled:" not in text and "PPO - GRPO peak:" not in text


def test_studies_notebook_shows_each_published_study():
    notebook = execute("studies.ipynb")
    text = outputs(notebook)
    for study in ("group-size", "kl", "length", "onpolicy"):
        assert f"{study}: " in text and " seeds, profile " in text
    assert "vs itself: reference" in text and " points, KL " in text
    markdown = [out for c in notebook.cells if c.cell_type == "code" for out in c.get("outputs", [])]
    assert sum("image/png" in out.get("data", {}) for out in markdown) >= 4  # each study's plot
