"""A recipe's settings from its YAML and the command line (TRL's TrlParser), with the config file named in errors."""

import difflib
import re
import sys
import warnings
from pathlib import Path

import yaml

from core.distributed import check_engine, prepare_cpu_launch
from core.errors import one_line_errors


def parse_config(parser):
    """TrlParser.parse_args_and_config, with the config file named in errors (unknown keys are errors)."""
    one_line_errors()
    config = sys.argv[sys.argv.index("--config") + 1] if "--config" in sys.argv[:-1] else None
    if config and not Path(config).is_file():
        raise SystemExit(
            f"error: config file {config} does not exist; the shipped ones: "
            + ", ".join(str(p) for p in sorted(Path("recipes/configs").glob("*/*.yaml")))
        )
    if "gradient_checkpointing" not in (Path(config).read_text() if config else "") + " ".join(sys.argv):
        # TRL 1.12's configs default the name transformers 5 deprecated (gradient_checkpointing=True), so every
        # config that does not set activation_checkpointing warns; only a user who wrote the old name is told.
        warnings.filterwarnings("ignore", message="`gradient_checkpointing` is deprecated", category=FutureWarning)
    SOURCES.clear()
    written = yaml.safe_load(Path(config).read_text()) if config else {}
    SOURCES.update({key: config for key in written or {}})
    given = {arg[2:].split("=")[0].replace("-", "_") for arg in sys.argv if arg[:2] == "--"}
    SOURCES.update(dict.fromkeys(given, "the command line"))
    launch = {key: value for key, value in prepare_cpu_launch(given).items() if key in known_keys(parser)}
    SOURCES.update(dict.fromkeys(launch, "the launch (no CUDA here)"))
    try:
        parsed = parser.parse_args_and_config(sys.argv[1:] + [a for key, v in launch.items() for a in (f"--{key}", v)])
    except ValueError as error:
        unknown = re.findall(r"'--([^']+)'", str(error))
        if not unknown:
            raise SystemExit(f"error in {config or 'command line'}: {error}") from error
        where = "config file" if "config file" in str(error) else "command line"
        raise SystemExit(
            f"error in {config or 'command line'}: " + "; ".join(unknown_key(name, parser, where) for name in unknown)
        ) from error
    check_settings(*parsed)
    for settings in parsed:  # the training arguments: their process group is set up, no model is loaded yet
        if getattr(settings, "distributed_state", None) is not None:
            check_engine(settings.distributed_state)
    return parsed


# Where each setting of this process's recipe came from: the config file's path or "the command line".
SOURCES: dict[str, str] = {}
# Settings that count something and must be positive where they are set.
POSITIVE = (
    "max_completion_length",
    "max_prompt_length",
    "max_length",
    "max_new_tokens",
    "response_length",
    "num_generations",
    "num_samples",
    "per_device_train_batch_size",
    "gradient_accumulation_steps",
)


def source_of(key: str) -> str:
    return SOURCES.get(key, "the default")


def check_settings(*configs) -> None:
    """Values no run can use, in one line each naming the value and where it came from, before any model loads:
    a learning rate <= 0, max_steps 0 (transformers would silently run a full epoch), a count or length <= 0."""
    problems = []
    for config in configs:
        rate = getattr(config, "learning_rate", None)
        if rate is not None and rate <= 0:
            problems.append(f"learning_rate {rate:g} (from {source_of('learning_rate')}) must be > 0")
        if getattr(config, "max_steps", None) == 0 and "max_steps" in SOURCES:
            problems.append(
                f"max_steps 0 (from {source_of('max_steps')}) would train a full epoch; give a positive "
                "number of steps, or -1 to train num_train_epochs"
            )
        for key in POSITIVE:
            value = getattr(config, key, None)
            if isinstance(value, int | float) and not isinstance(value, bool) and value <= 0:
                problems.append(f"{key} {value} (from {source_of(key)}) must be > 0")
    if problems:
        raise SystemExit("error: " + "; ".join(dict.fromkeys(problems)))


def known_keys(parser) -> set[str]:
    return {option[2:].replace("-", "_") for option in parser._option_string_actions if option[:2] == "--"}


def unknown_key(name: str, parser, where: str) -> str:
    """'unknown key NAME (did you mean ...?)' with the closest of the parser's own keys."""
    known = sorted(known_keys(parser))
    close = difflib.get_close_matches(name, known, n=3, cutoff=0.6)
    spelled = f"--{name}" if where == "command line" else name
    hint = (
        f" (did you mean {' or '.join(('--' if where == 'command line' else '') + c for c in close)}?)"
        if close
        else ""
    )
    return f"unknown {'flag' if where == 'command line' else 'key'} {spelled!r}{hint}"
