"""Math answer checking with math-verify, run outside the trainer's process.

`math_accuracy` is the one verifier of "correct" for math in this project: GRPO/PPO rewards, the DPO/ORPO pair
builder, `make score` and `eval/` all call it.
"""

import re

from rewards._isolated import pool
from rewards._text import completion_text

TIMEOUT_SECONDS = 5.0
_PARSE_TIMEOUT = 2
# Linear-time patterns only: completions can be megabytes of adversarial text.
_ANSWER_TAG = re.compile(r"<answer>(.*?)</answer>", re.DOTALL)
_HASHES = re.compile(r"####\s*([^\n]*)")
_ANSWER_IS = re.compile(r"answer is[:\s]*([^\n]*)", re.IGNORECASE)
# The final answer sits at the end; parsing megabytes of text only buys timeouts.
MAX_CHARS = 10_000


def extract_answer_span(text: str) -> str:
    """The part of a completion that states the final answer; the whole text if no marker is found.

    >>> extract_answer_span("<think>2+2</think><answer>4</answer>")
    '4'
    >>> extract_answer_span("steps...\\n#### 1,234")
    '1,234'
    >>> extract_answer_span("So the answer is $\\\\frac{1}{2}$.")
    '$\\\\frac{1}{2}$.'
    """
    text = text[-MAX_CHARS:]
    if "\\boxed" in text:
        return text  # math-verify's LaTeX extraction takes the last \boxed{} first
    for pattern in (_ANSWER_TAG, _HASHES, _ANSWER_IS):
        matches = pattern.findall(text)
        if matches and matches[-1].strip():
            return matches[-1].strip()
    return text


def _parse(text: str):
    from math_verify import ExprExtractionConfig, LatexExtractionConfig, parse

    configs = [LatexExtractionConfig(boxed_match_priority=0), ExprExtractionConfig()]
    if "\\" in text and "$" not in text and "\\boxed" not in text and "\\(" not in text:
        # LaTeX answers without delimiters ("\frac{14}{3}") are only found inside math mode.
        parsed = parse(f"${text}$", extraction_config=configs, parsing_timeout=_PARSE_TIMEOUT)
        if parsed:
            return parsed
    return parse(text, extraction_config=configs, parsing_timeout=_PARSE_TIMEOUT)


def gold_span(gold: str) -> str:
    """GSM8K solutions end in `#### <answer>`; other datasets give the bare answer.

    >>> gold_span("48/2 = 24 clips.\\n#### 72")
    '72'
    """
    return gold.rsplit("####", 1)[1].strip() if "####" in gold else gold.strip()


def verify_answer(completion: str, gold: str) -> list:
    """[score, extracted answer, reason]. Runs inside an isolated worker (see rewards/_isolated.py)."""
    from math_verify import verify

    gold_parsed = _parse(gold_span(gold))
    if not gold_parsed:
        return [None, None, "unparseable gold"]
    answer = _parse(extract_answer_span(completion))
    if not answer:
        return [0.0, None, "unparseable answer"]
    correct = verify(gold_parsed, answer, timeout_seconds=_PARSE_TIMEOUT)
    return [1.0 if correct else 0.0, str(answer[-1])[:200], "correct" if correct else "wrong"]


def check_answers(completions, answer) -> list[tuple[float | None, str | None, str]]:
    """(score, extracted answer, reason) per completion; reasons include "timeout" and "memory limit"."""
    items = [[completion_text(c), str(gold)] for c, gold in zip(completions, answer, strict=True)]
    results = pool().map("rewards.math.verify_answer", items, timeout=TIMEOUT_SECONDS)
    return [tuple(r) if isinstance(r, list) else (0.0, None, r) for r in results]


def math_accuracy(completions, answer, **kwargs) -> list[float | None]:
    """1.0 if the completion's final answer equals the gold `answer` (math-verify equivalence), else 0.0.

    The answer may sit in `\\boxed{}`, `<answer>...</answer>`, after "The answer is" or "####", or be the last
    number. `None` when the gold answer itself cannot be parsed (the sample says nothing about the model).

    >>> math_accuracy(["The answer is $\\\\boxed{\\\\frac{28}{6}}$", "#### 5"],
    ...               answer=["\\\\frac{14}{3}", "Six.\\n#### 6"])
    [1.0, 0.0]
    """
    return [score for score, _, _ in check_answers(completions, answer)]
