"""A recipe's settings from its YAML and the command line (TRL's TrlParser), with the config file named in errors."""

import difflib
import re
import sys
import warnings
from pathlib import Path

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
    try:
        return parser.parse_args_and_config()
    except ValueError as error:
        unknown = re.findall(r"'--([^']+)'", str(error))
        if not unknown:
            raise SystemExit(f"error in {config or 'command line'}: {error}") from error
        where = "config file" if "config file" in str(error) else "command line"
        raise SystemExit(
            f"error in {config or 'command line'}: " + "; ".join(unknown_key(name, parser, where) for name in unknown)
        ) from error


def unknown_key(name: str, parser, where: str) -> str:
    """'unknown key NAME (did you mean ...?)' with the closest of the parser's own keys."""
    known = sorted({option[2:].replace("-", "_") for option in parser._option_string_actions if option[:2] == "--"})
    close = difflib.get_close_matches(name, known, n=3, cutoff=0.6)
    spelled = f"--{name}" if where == "command line" else name
    hint = (
        f" (did you mean {' or '.join(('--' if where == 'command line' else '') + c for c in close)}?)"
        if close
        else ""
    )
    return f"unknown {'flag' if where == 'command line' else 'key'} {spelled!r}{hint}"
