"""The README's commands and its "Write your own reward" example work as written."""

import doctest
import importlib.util
import json
import os
import re
import subprocess
import sys

import yaml

from rewards import get_reward_funcs, required_columns
from tests.conftest import REPO_ROOT

README = (REPO_ROOT / "README.md").read_text()


def code_blocks(language: str) -> list[str]:
    return re.findall(rf"```{language}\n(.*?)```", README, re.DOTALL)


def test_the_two_commands_are_at_the_top_and_exist_in_the_makefile():
    first_block = code_blocks("bash")[0]
    assert "make grpo" in first_block and "make test" in first_block
    makefile = (REPO_ROOT / "Makefile").read_text()
    assert re.search(r"^grpo:", makefile, re.M) and re.search(r"^test:", makefile, re.M)
    assert "make test" in (REPO_ROOT / ".ci" / "run").read_text()


def test_write_your_own_reward_example(tmp_path):
    source = next(block for block in code_blocks("python") if "# myrewards.py" in block)
    source = "\n".join(line[3:] if line.startswith("   ") else line for line in source.splitlines())
    (tmp_path / "myrewards.py").write_text(source)
    spec = importlib.util.spec_from_file_location("myrewards", tmp_path / "myrewards.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert doctest.testmod(module).failed == 0

    samples = tmp_path / "samples.jsonl"
    samples.write_text(
        "".join(
            json.dumps(row) + "\n"
            for row in [
                {"completion": "12+30. So the sum is 42.\n#### 42 coins", "answer": "#### 42", "unit": "coins"},
                {"completion": "#### 41", "answer": "#### 42", "unit": "coins"},
            ]
        )
    )
    # From the user's own folder, with only that folder on the path: the installed project supplies the rest.
    env = {**os.environ, "PYTHONPATH": str(tmp_path)}
    out = subprocess.run(
        [sys.executable, "-m", "eval.score", str(samples), "--rewards", "myrewards.mentions_unit,math_accuracy"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert "myrewards.mentions_unit: 1.0" in out and "math_accuracy: 0.0  (wrong: extracted '41')" in out
    assert "math_accuracy: mean 0.500 over 2/2" in out

    snippet = yaml.safe_load(next(block for block in code_blocks("yaml") if "myrewards" in block))
    sys.path.insert(0, str(tmp_path))
    try:
        assert [f.__name__ for f in get_reward_funcs(snippet["reward_funcs"])] == ["math_accuracy", "mentions_unit"]
        assert required_columns(snippet["reward_funcs"]) == ["answer", "unit"]  # the reward's own column
    finally:
        sys.path.remove(str(tmp_path))
