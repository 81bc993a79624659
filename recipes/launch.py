"""`accelerate launch` for the recipes, with the user's error as the last line (`make <method> LAUNCH=...`).

Usage:
    make grpo LAUNCH=zero2 NPROC=2
    python -m recipes.launch --config_file recipes/accelerate/zero2.yaml --num_processes 2 -m recipes.grpo \
        --config recipes/configs/tiny/grpo.yaml

Under plain `accelerate launch`, a refusal that every rank prints (a bad setting, an engine refused) is followed by
torch's launcher's own 30-line `ChildFailedError` traceback, so the refusal is not what the user reads last. Here
each rank runs the recipe through this module, which keeps its one-line error (an `error: ...` line, or a SystemExit
message) in a folder of the launch instead of printing it; when the launch fails and every rank that failed left
such a line, they are printed once each (the same line from every rank: once) and the launcher's traceback is not.
A rank that crashed (any other exception) prints its own traceback, and the launcher's report follows as usual.
"""

import logging
import os
import runpy
import shutil
import sys
import tempfile
from pathlib import Path

ERRORS_ENV = "RECIPE_LAUNCH_ERRORS"


def run_rank(module: str, args: list[str]) -> None:
    """One rank: the recipe as `python -m module args`, its one-line error kept in the launch's folder."""
    from core.errors import ONE_LINE, close_progress_bars

    folder, rank = Path(os.environ[ERRORS_ENV]), os.environ.get("RANK", "0")
    sys.argv = [module, *args]
    try:
        runpy.run_module(module, run_name="__main__", alter_sys=True)
    except SystemExit as stop:
        if isinstance(stop.code, str):
            close_progress_bars()
            (folder / f"rank-{rank}.line").write_text(stop.code)
            raise SystemExit(1) from None
        raise
    except ONE_LINE as error:
        close_progress_bars()
        (folder / f"rank-{rank}.line").write_text(f"error: {error}")
        raise SystemExit(1) from None
    except BaseException:
        (folder / f"rank-{rank}.crash").touch()
        raise


def launch(argv: list[str]) -> int:
    from accelerate.commands.launch import launch_command, launch_command_parser

    args = launch_command_parser().parse_args(argv)
    if not args.module:
        raise SystemExit("recipes.launch runs a recipe module: give -m recipes.<method> ...")
    args.training_script_args = ["--rank", args.training_script, *args.training_script_args]
    args.training_script = "recipes.launch"
    # the elastic agent's own "failed (exitcode: 1)" log line; a crash's report still comes with the traceback below
    logging.getLogger("torch.distributed.elastic").setLevel(logging.CRITICAL)
    folder = Path(tempfile.mkdtemp(prefix="recipe-launch-"))
    os.environ[ERRORS_ENV] = str(folder)
    try:
        launch_command(args)
        return 0
    except BaseException:
        lines = [p.read_text() for p in sorted(folder.glob("rank-*.line"))]
        if not lines or any(folder.glob("rank-*.crash")):
            raise
        ranks = sorted(folder.glob("rank-*.line"), key=lambda p: int(p.stem.split("-")[1]))
        distinct = dict.fromkeys(p.read_text() for p in ranks)
        for line in distinct:
            if len(distinct) == 1:
                print(line, file=sys.stderr)
            else:
                names = [p.stem for p in ranks if p.read_text() == line]
                print(f"[{', '.join(names)}] {line}", file=sys.stderr)
        return 1
    finally:
        shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    if sys.argv[1:2] == ["--rank"]:
        run_rank(sys.argv[2], sys.argv[3:])
    else:
        sys.exit(launch(sys.argv[1:]))
