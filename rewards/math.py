"""Math answer checking with math-verify, run outside the trainer's process.

`math_accuracy` is the one verifier of "correct" for math in this project: GRPO/PPO rewards, the DPO/ORPO pair
builder, `make score` and `eval/` all call it.
"""

import functools
import re

from rewards.declare import prepares
from rewards.math_workers import pool
from rewards.text import completion_text

TIMEOUT_SECONDS = 5.0
_PARSE_TIMEOUT = 2
# Linear-time patterns only: completions can be megabytes of adversarial text.
_ANSWER_TAG = re.compile(r"<answer>(.*?)</answer>", re.DOTALL)
_HASHES = re.compile(r"####\s*([^\n]*)")
_ANSWER_IS = re.compile(r"answer is[:\s]*([^\n]*)", re.IGNORECASE)
# The final answer sits at the end; parsing megabytes of text only buys timeouts.
MAX_CHARS = 10_000


def after_reasoning(text: str) -> str:
    """The reply after the model's reasoning: what follows the last `</think>` (its `<think>` may sit in the prompt,
    where R1-style chat templates put it); nothing while a `<think>` is still open (a reply cut off mid-thought
    states no final answer). An answer inside the reasoning is a draft, not the answer (as TRL's
    reasoning_accuracy_reward reads it).

    >>> after_reasoning("<think>3? no, 4</think> It is 4."), after_reasoning("3</think>4"), after_reasoning("<think>3")
    (' It is 4.', '4', '')
    """
    if "</think>" in text:
        return text.rsplit("</think>", 1)[1]
    return text.split("<think>", 1)[0]


def extract_answer_span(text: str) -> str:
    """The part of a completion that states the final answer, after its reasoning (`after_reasoning`); the whole
    text if no marker is found.

    >>> extract_answer_span("<think>2+2</think><answer>4</answer>")
    '4'
    >>> extract_answer_span("steps...\\n#### 1,234")
    '1,234'
    >>> extract_answer_span("So the answer is $\\\\frac{1}{2}$.")
    '$\\\\frac{1}{2}$.'
    """
    text = after_reasoning(text)[-MAX_CHARS:]
    if "\\boxed" in text:
        return text  # math-verify's LaTeX extraction takes the last \boxed{} first
    for pattern in (_ANSWER_TAG, _HASHES, _ANSWER_IS):
        matches = pattern.findall(text)
        if matches and matches[-1].strip():
            return matches[-1].strip()
    return text


# Scientific notation as plain text ("4.5e33", Minerva's style) reads as 4.5*e*33 in LaTeX math mode.
_SCIENTIFIC = re.compile(r"(?<![\w.])(\d+(?:\.\d+)?)[eE]([+-]?\d+)(?![\w.])")
# A lower-case word that is not a LaTeX command: prose ("72 apples"), not a formula ("3m+1", "MR=SRMC").
_PROSE_WORD = re.compile(r"(?<![\\a-zA-Z])[a-z]{3,}")
# A sentence's full stop inside the answer ("\\boxed{(1,2]\\cup\\{5\\}.}"): math-verify reads such an answer as 0.
_STOP_BEFORE_BRACE = re.compile(r"\.\s*(?=\}|\$)")
_MATH_DELIMITERS = ("$", "\\(", "\\[", "\\boxed")
_PYTHON_OPERATORS = ("**", "//")  # "9**9**9**9" is Python; LaTeX math mode would read it as 9


def _configs():
    from math_verify import ExprExtractionConfig, LatexExtractionConfig

    return [LatexExtractionConfig(boxed_match_priority=0), ExprExtractionConfig()]


def _scientific_to_latex(text: str) -> str:
    r"""
    >>> print(_scientific_to_latex("about 4.5e33 erg, not e3 or 2e"))
    about 4.5 \times 10^{33} erg, not e3 or 2e
    """
    return _SCIENTIFIC.sub(r"\1 \\times 10^{\2}", text)


def _parse_math_mode(span: str) -> list:
    """`span` read as the inside of `$...$`: how MATH, AMC, AIME and OlympiadBench write bare answers."""
    from math_verify import parse

    span = _scientific_to_latex(span.strip().rstrip(".").rstrip())
    return parse(f"${span}$", extraction_config=_configs(), parsing_timeout=_PARSE_TIMEOUT) if span else []


def _reads_as_bare_math(span: str) -> bool:
    """No math delimiters, and LaTeX or a formula rather than prose or Python."""
    unescaped = span.replace("\\$", "")  # "\\$15,300" is money, not math mode
    return not any(marker in unescaped for marker in _MATH_DELIMITERS + _PYTHON_OPERATORS) and (
        "\\" in span or not _PROSE_WORD.search(span)
    )


def _parse(text: str) -> list:
    """A completion's answer span: math-verify's own extraction where the text marks its math ($, \\(, \\boxed);
    a bare span in math mode unless it reads as prose or Python (then the text extraction finds its number)."""
    from math_verify import parse

    if _reads_as_bare_math(text):
        parsed = _parse_math_mode(text)
        if parsed:
            return parsed
    text = _STOP_BEFORE_BRACE.sub("", _scientific_to_latex(text))
    return parse(text, extraction_config=_configs(), parsing_timeout=_PARSE_TIMEOUT)


def _squeeze(text: str) -> str:
    return re.sub(r"\s+|\$", "", text)


@functools.lru_cache(maxsize=4096)
def parse_gold(gold: str) -> list:
    """A gold answer as written: a GSM8K solution's `#### n`, or a bare answer read in math mode (`a - b`,
    `3 - 2i`, `(1,6]`, `2,-5`, `y = -3x + 1`, `\\$12,\\!500`, `4.5e33`). Only when math mode yields nothing (or the
    gold is prose), math-verify's text extraction, and only if it took the whole answer: a first term (`3` of
    `3m+1`) is no gold at all. [] when unparseable. Cached: GRPO scores k completions against each gold.

    >>> [str(parse_gold(g)[0]) for g in ["Natalia sold 72 clips.\\n#### 1,234", "1+15i", "(1,6]", "2,-5"]]
    ['1234', '15*i + 1', 'Interval.Lopen(1, 6)', '{-5, 2}']
    """
    from math_verify import parse

    span = gold_span(gold)
    stated = _ANSWER_IS.findall(span)  # "The answer is \boxed{42}": what it says, as for a completion
    if stated and stated[-1].strip():
        span = stated[-1].strip().rstrip(".").rstrip()
    if any(marker in span.replace("\\$", "") for marker in ("\\boxed", "\\(", "\\[")):
        # delimited as math-verify reads it (`\boxed{42}` without `$`, `\(\frac12\)`): its own extraction
        parsed = parse(span, extraction_config=_configs(), parsing_timeout=_PARSE_TIMEOUT)
        if parsed and not all(isinstance(item, str) for item in parsed):
            return parsed
    parsed = _parse_math_mode(span) if _reads_as_bare_math(span) or "$" in span else []
    if parsed:
        return parsed
    parsed = parse(span, extraction_config=_configs(), parsing_timeout=_PARSE_TIMEOUT)
    if parsed and _squeeze(str(parsed[-1])) == _squeeze(span):
        return parsed
    # What math-verify can hold only as text ("np.arcsin(10/13)") matches only the same text; prose read in math
    # mode ("not given" as n*o*t*g*i*v*e*n) matches nothing real and is reported as unparseable.
    parsed = _parse_math_mode(span)
    return parsed if parsed and all(isinstance(item, str) for item in parsed) else []


def _plain_symbols(parsed: list) -> list:
    """Every free symbol as a plain one of the same name: math-verify gives `i` other assumptions in `2 + 11 i`
    than in `2+11i`, and sympy then keeps the two apart."""
    from sympy import Basic, Symbol

    return [
        item.xreplace({s: Symbol(s.name) for s in item.free_symbols if isinstance(s, Symbol)})
        if isinstance(item, Basic)
        else item
        for item in parsed
    ]


def gold_span(gold: str) -> str:
    """GSM8K solutions end in `#### <answer>`; other datasets give the bare answer.

    >>> gold_span("48/2 = 24 clips.\\n#### 72")
    '72'
    """
    return gold.rsplit("####", 1)[1].strip() if "####" in gold else gold.strip()


def _is_relation(parsed: list) -> bool:
    """An equation, or a chain of them (math-verify reads `a = b = c` as And(Eq(a, b), Eq(b, c)))."""
    from sympy import And, Equality

    return any(
        isinstance(item, Equality) or isinstance(item, And) and all(isinstance(a, Equality) for a in item.args)
        for item in parsed
    )


def chain_end(answer: list) -> list:
    r"""An equation chain's final answer: its last right-hand side, read in math mode (`Total = 129 + 195 = 324`
    answers 324); anything else as it is. Only for a gold that is not itself an equation.

    >>> [str(x) for x in chain_end(_parse(r"\[ Total = 129 + 195 = 324 \]"))]
    ['324', '324']
    """
    text = next((item for item in reversed(answer) if isinstance(item, str)), "")
    if not _is_relation(answer) or "=" not in text:
        return answer
    return _parse_math_mode(text.rsplit("=", 1)[1]) or answer


def verify_answer(completion: str, gold: str) -> list:
    """[score, extracted answer, reason]. Runs inside an isolated worker (see rewards/math_workers.py)."""
    from math_verify import verify

    gold_parsed = parse_gold(gold)
    if not gold_parsed:
        return [None, None, "unparseable gold"]
    answer = _parse(extract_answer_span(completion))
    if not answer:
        return [0.0, None, "unparseable answer"]
    if not _is_relation(gold_parsed):  # a bare gold is matched by a chain's end, not by the whole equation
        answer = chain_end(answer)
    correct = verify(_plain_symbols(gold_parsed), _plain_symbols(answer), timeout_seconds=_PARSE_TIMEOUT)
    return [1.0 if correct else 0.0, str(answer[-1])[:200], "correct" if correct else "wrong"]


def direct_verify(completion: str, gold: str) -> bool:
    """math-verify called as its README shows, gold wrapped in `$...$`, without this module's reading of golds and
    completions: the baseline `make bench-rewards` and the answer-set tests measure `math_accuracy` against. Runs
    inside an isolated worker, like `verify_answer`."""
    from math_verify import parse, verify

    return bool(verify(parse("$" + gold + "$"), parse(completion)))


def unparseable_golds(answers) -> list[tuple[int, str]]:
    """(index, gold) of every gold answer math_accuracy cannot parse (it scores their samples None), for the
    data checks of the recipes, `make score` and `make eval`."""
    results = pool().map("rewards.math.gold_parses", [[_gold_text(a)] for a in answers], timeout=TIMEOUT_SECONDS)
    return [(i, str(a)) for i, (a, ok) in enumerate(zip(answers, results, strict=True)) if ok is not True]


def _gold_text(gold) -> str:
    """A missing gold (None, a JSON null) stays empty, so it never parses: never the text "None" that a completion
    saying "None" would match."""
    return "" if gold is None else str(gold)


def gold_parses(gold: str) -> bool:
    return bool(parse_gold(gold))


def check_answers(completions, answer) -> list[tuple[float | None, str | None, str]]:
    """(score, extracted answer, reason) per completion; reasons include "timeout" and "memory limit"."""
    items = [[completion_text(c), _gold_text(gold)] for c, gold in zip(completions, answer, strict=True)]
    results = pool().map("rewards.math.verify_answer", items, timeout=TIMEOUT_SECONDS)
    return [tuple(r) if isinstance(r, list) else (0.0, None, r) for r in results]


def warn_unparseable_golds(dataset, source: str):
    """The data step of the rewards that read gold answers (`@prepares`): gold answers math_accuracy cannot parse are
    a data problem (their samples score None and teach nothing), said with how many and the first few before any
    model loads; the rows come back unchanged."""
    bad = unparseable_golds(dataset["answer"])
    if bad:
        print(
            f"warning: {len(bad)} of {len(dataset)} gold answers in {source} (column 'answer') cannot be parsed; "
            "math_accuracy scores their samples None (left out of the reward): "
            + ", ".join(f"row {i}: {gold[:60]!r}" for i, gold in bad[:5])
            + (", ..." if len(bad) > 5 else "")
        )
    return dataset


@prepares(warn_unparseable_golds)
def math_accuracy(completions, answer, **kwargs) -> list[float | None]:
    """1.0 if the completion's final answer equals the gold `answer` (math-verify equivalence), else 0.0.

    The answer may sit in `\\boxed{}`, `<answer>...</answer>`, after "The answer is" or "####", or be the last
    number; only the text after a `<think>` block counts (`after_reasoning`). `None` when the gold answer itself
    cannot be parsed (the sample says nothing about the model).

    >>> math_accuracy(["The answer is $\\\\boxed{\\\\frac{28}{6}}$", "#### 5"],
    ...               answer=["\\\\frac{14}{3}", "Six.\\n#### 6"])
    [1.0, 0.0]
    """
    return [score for score, _, _ in check_answers(completions, answer)]
