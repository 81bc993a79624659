"""A recipe's settings from its YAML and the command line (TRL's TrlParser), with the config file named in errors."""

import difflib
import re
import sys
import warnings
from pathlib import Path

import yaml

from core.errors import one_line_errors
from core.inputs.distributed import check_engine, prepare_cpu_launch


def parse_config(parser):
    """TrlParser.parse_args_and_config, with the config file named in errors (unknown keys are errors): the parsed
    dataclasses, then the `Sources` of their values (`main(*parse_config(parser))`)."""
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
    written = yaml.safe_load(Path(config).read_text()) if config else {}
    sources = Sources({key: config for key in written or {}})
    given = {arg[2:].split("=")[0].replace("-", "_") for arg in sys.argv if arg[:2] == "--"}
    sources.update(dict.fromkeys(given, "the command line"))
    launch = {key: value for key, value in prepare_cpu_launch(given).items() if key in known_keys(parser)}
    sources.update(dict.fromkeys(launch, "the launch (no CUDA here)"))
    try:
        parsed = parser.parse_args_and_config(sys.argv[1:] + [a for key, v in launch.items() for a in (f"--{key}", v)])
    except ValueError as error:
        unknown = re.findall(r"'--([^']+)'", str(error))
        if not unknown:
            culprit = blame(parser, sys.argv[1:], given)
            where = f": {culprit} (from the command line)" if culprit else f" in {config or 'command line'}"
            raise SystemExit(f"error{where}: {error}") from error
        where = "config file" if "config file" in str(error) else "command line"
        raise SystemExit(
            f"error in {config or 'command line'}: " + "; ".join(unknown_key(name, parser, where) for name in unknown)
        ) from error
    check_settings(*parsed, sources=sources)
    for settings in parsed:  # the training arguments: their process group is set up, no model is loaded yet
        if getattr(settings, "distributed_state", None) is not None:
            check_engine(settings.distributed_state)
    return (*parsed, sources)


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


class Sources(dict):
    """Where each setting of a recipe came from (key -> the config file's path, "the command line" or the launch),
    as parsing found it; `of(key)` names it in errors."""

    def of(self, key: str) -> str:
        return self.get(key, "the default")


# Settings that no run can train with, by name, wherever a config has them: the test on the value, what is required.
# (Counts and lengths <= 0 are POSITIVE's.) TRL and transformers find some of these only after the model loaded
# (temperature 0 in the middle of generation, lora_r 0 in peft), and some never (a negative beta trains).
KL = "it weighs the KL penalty that holds the policy near the reference; a negative one rewards drifting away from it"
RANGES = {
    "temperature": (lambda v: v > 0, "must be > 0: this method samples (greedy decoding has no temperature)"),
    "top_p": (lambda v: 0 < v <= 1, "must be in (0, 1]"),
    "top_k": (lambda v: v >= 0, "must be >= 0 (0 turns it off)"),
    "min_p": (lambda v: 0 <= v <= 1, "must be in [0, 1]"),
    "repetition_penalty": (lambda v: v > 0, "must be > 0 (1 turns it off)"),
    "lora_r": (lambda v: v > 0, "must be > 0: it is the LoRA adapter's rank"),
    "lora_alpha": (lambda v: v > 0, "must be > 0: it scales the LoRA update"),
    "lora_dropout": (lambda v: 0 <= v < 1, "must be in [0, 1)"),
    "beta": (lambda v: v >= 0, f"must be >= 0: {KL}"),
    "kl_coef": (lambda v: v >= 0, f"must be >= 0: {KL}"),
    "num_iterations": (lambda v: v >= 1, "must be >= 1: the updates per generation batch"),
    "epsilon": (lambda v: v > 0, "must be > 0: the clipping range"),
    "epsilon_high": (lambda v: v > 0, "must be > 0: the clipping range"),
    "cliprange": (lambda v: v > 0, "must be > 0: the clipping range"),
    "cliprange_value": (lambda v: v > 0, "must be > 0: the critic's clipping range"),
    "vf_coef": (lambda v: v >= 0, "must be >= 0"),
    "gamma": (lambda v: 0 <= v <= 1, "must be in [0, 1]"),
    "lam": (lambda v: 0 <= v <= 1, "must be in [0, 1]"),
    "num_ppo_epochs": (lambda v: v >= 1, "must be >= 1"),
    "num_mini_batches": (lambda v: v >= 1, "must be >= 1"),
    "local_rollout_forward_batch_size": (lambda v: v >= 1, "must be >= 1"),
    "steps_per_generation": (lambda v: v >= 1, "must be >= 1"),
    "label_smoothing": (lambda v: 0 <= v < 0.5, "must be in [0, 0.5)"),
    "min_margin": (lambda v: v >= 0, "must be >= 0"),
    "reward_timeout": (lambda v: v >= 0, "must be >= 0 (0: no limit)"),
    "stop_grace_seconds": (lambda v: v >= 0, "must be >= 0 (0: wait for the step however long it takes)"),
}


def check_settings(*configs, sources: Sources) -> None:
    """Values no run can use, in one line each naming the value and where it came from, before any model loads:
    a learning rate <= 0, max_steps 0 (transformers would silently run a full epoch), a count or length <= 0, and the
    ranges of RANGES (LoRA's only where LoRA is on; DPO's beta must be > 0, since beta 0 leaves no gradient)."""
    problems = []
    for config in configs:
        for key in ("learning_rate", "value_learning_rate"):
            rate = getattr(config, key, None)
            if rate is not None and rate <= 0:
                problems.append(f"{key} {rate:g} (from {sources.of(key)}) must be > 0")
        if getattr(config, "max_steps", None) == 0 and "max_steps" in sources:
            problems.append(
                f"max_steps 0 (from {sources.of('max_steps')}) would train a full epoch; give a positive "
                "number of steps, or -1 to train num_train_epochs"
            )
        for key in POSITIVE:
            value = getattr(config, key, None)
            if _is_number(value) and value <= 0:
                problems.append(f"{key} {value} (from {sources.of(key)}) must be > 0")
        for key, (valid, requirement) in RANGES.items():
            value = getattr(config, key, None)
            if key.startswith("lora_") and not getattr(config, "use_peft", False):
                continue
            if _is_number(value) and not valid(value):
                problems.append(f"{key} {value:g} (from {sources.of(key)}) {requirement}")
        if type(config).__name__ == "DPOConfig" and _is_number(config.beta) and config.beta == 0:
            problems.append(f"beta 0 (from {sources.of('beta')}) must be > 0: with beta 0 DPO's loss has no gradient")
    if problems:
        raise SystemExit("error: " + "; ".join(dict.fromkeys(problems)))


def _is_number(value) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def blame(parser, argv: list[str], given: set[str]) -> str | None:
    """The command-line flags behind a value that TRL's or transformers' own config checks refuse, as `key value`:
    each one without which the settings parse (None: the config file's values)."""
    culprits = []
    for key in sorted(given - {"config"}):
        try:
            parser.parse_args_and_config(_without_flag(argv, key))
        except (ValueError, SystemExit):
            continue
        culprits.append(f"{key} {_flag_value(argv, key)}")
    return ", ".join(culprits) or None


def _flag_tokens(argv: list[str], key: str) -> list[int]:
    """Positions of `--key value` (or `--key=value`, or a bare `--key`) in argv."""
    for i, arg in enumerate(argv):
        name = arg[2:].split("=")[0].replace("-", "_") if arg.startswith("--") else None
        if name == key:
            if "=" in arg or i + 1 == len(argv) or argv[i + 1].startswith("--"):
                return [i]
            return [i, i + 1]
    return []


def _without_flag(argv: list[str], key: str) -> list[str]:
    drop = set(_flag_tokens(argv, key))
    return [arg for i, arg in enumerate(argv) if i not in drop]


def _flag_value(argv: list[str], key: str) -> str:
    tokens = _flag_tokens(argv, key)
    if not tokens:
        return ""
    first = argv[tokens[0]]
    return first.split("=", 1)[1] if "=" in first else (argv[tokens[-1]] if len(tokens) == 2 else "true")


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
