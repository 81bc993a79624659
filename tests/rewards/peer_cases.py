"""The peers' own reward test cases, in our calling convention: open-r1's `tests/test_rewards.py` (commit 1416fa0)
and TRL's `tests/test_rewards.py` (commit f2cd577), each case with the value the peer's test asserts.

A case is run through our counterpart, `REWARDS[reward]` built with `kwargs` (as a YAML `reward_kwargs` entry
would), with the peer's solution column as our `answer`. `differs` names a difference by design: the test then
asserts that ours really differs and gives `ours`. Peer rewards with no counterpart here (and why) are listed in
NO_COUNTERPART; test_peer_rewards.py counts both.

The texts below are test inputs copied from the peers' tests (Apache-2.0); the code around them is ours.
"""

from typing import NamedTuple

OPEN_R1 = "open-r1"
TRL = "trl"
FRAC = r"\frac{63}{400}"


class Case(NamedTuple):
    peer: str  # "<project> <test name>"
    reward: str  # our REWARDS key
    completions: list[str]
    theirs: list  # what the peer's test asserts, one per completion (ValueError: building the reward raises)
    answer: list[str] | None = None
    kwargs: dict | None = None
    differs: str | None = None  # why ours differs, by design
    ours: list | None = None  # what ours gives where it differs


def padded(text: str, length: int) -> str:
    """open-r1's cosine test pads the content with spaces to a length in characters."""
    return text + " " * (length - len(text))


def as_words(ids: list[int]) -> str:
    """TRL's repetition penalty counts n-grams of token ids; ours counts words: one word per id."""
    return " ".join(f"w{i}" for i in ids)


FORMAT_BAD_OPEN_R1 = [
    "<think>Only thinking</think>",
    "<answer>Only answer</answer>",
    "No tags at all",
    "<think>Missing closing</think><answer>Missing closing",
    "<think>Wrong order</answer><answer>Wrong order</think>",
]
MULTILINE = (
    "<think>\nI will count each distinct object in the image:\n1. Purple scooter\n2. Red bicycle\n"
    "3. Green motorcycle\n4. Gray sedan\n5. Yellow school bus\n6. Small green double-decker bus\n"
    "7. Small red car\n8. Small purple car\n"
    "9. Small gray dirt bike\n\nThere are 9 distinct objects in total.\n</think>\n<answer>\n9\n</answer>"
)
COSINE = {"min_value_wrong": -1.0, "max_value_wrong": -0.5, "min_value_correct": 0.5, "max_value_correct": 1.0}
LONGER = r"\boxed{\frac{63}{400}}  " + "x" * 10
LONGER_WRONG = r"\boxed{\frac{64}{400}}  " + "x" * 10
CODE_GOOD = (
    "<think>\nLet's solve this\nStep 1: First step\n</think>\n<answer>\n```python\ndef hello():\n    print('world')\n"
    "```\n</answer>"
)
CODE_TWO_BLOCKS = (
    "<think>\nHere's an example:\n```python\nx = 1\n```\nNow the solution:\n</think>\n<answer>\n```python\n"
    "def solution():\n    return 42\n```\n</answer>"
)
CODE_MULTILINE = (
    "<think>\nHere's the analysis\n</think>\n<answer>\n```python\nclass Solution:\n    def __init__(self):\n"
    "        self.value = 42\n        \n    def get_value(self):\n        return self.value\n```\n</answer>"
)
CODE_FORMAT_DESIGN = (
    "code_format scores the code alone (one fenced Python block that parses), wherever the reply puts it: "
    "the think/answer layout is `format`'s job, and the two combine in reward_funcs"
)

CASES = [
    # open-r1: accuracy
    Case(f"{OPEN_R1} test_accuracy_reward_correct_answer", "math_accuracy", [rf"\boxed{{{FRAC}}}"], [1.0], [FRAC]),
    Case(f"{OPEN_R1} test_accuracy_reward_wrong_answer", "math_accuracy", [r"\boxed{\frac{64}{400}}"], [0.0], [FRAC]),
    Case(f"{OPEN_R1} test_accuracy_reward_wrong_answer_no_latex", "math_accuracy", [r"\boxed{3}"], [0.0], ["6"]),
    Case(
        f"{OPEN_R1} test_multiple_completions",
        "math_accuracy",
        [rf"\boxed{{{FRAC}}}", r"\boxed{\frac{64}{400}}"],
        [1.0, 0.0],
        [FRAC, FRAC],
    ),
    # open-r1: format
    Case(
        f"{OPEN_R1} test_format_reward_correct",
        "format",
        ["<think>\nSome reasoning\n</think>\n<answer>\nThe answer\n</answer>"],
        [1.0],
    ),
    *(Case(f"{OPEN_R1} test_format_reward_incorrect", "format", [text], [0.0]) for text in FORMAT_BAD_OPEN_R1),
    Case(f"{OPEN_R1} test_format_reward_specific_multiline", "format", [MULTILINE], [1.0]),
    # open-r1: reasoning steps
    *(
        Case(f"{OPEN_R1} test_reasoning_steps_reward", "reasoning_steps", [text], [value])
        for text, value in [
            ("Step 1: First step\nStep 2: Second step\nStep 3: Third step", 1.0),
            ("First, we do this.\nSecond, we do that.\nFinally, we conclude.", 1.0),
            ("Step 1: Only step", 1 / 3),
            ("First, we do this.\nFinally, we conclude.", 2 / 3),
            ("Just plain text without any clear steps", 0.0),
        ]
    ),
    # open-r1: cosine-scaled length (lengths in characters, as ours)
    *(
        Case(
            f"{OPEN_R1} test_cosine_scaled_reward",
            "cosine_length",
            [padded(content, length)],
            [value],
            [FRAC],
            kwargs=COSINE | {"max_len": 100},
        )
        for content, length, value in [
            (rf"\boxed{{{FRAC}}}", 20, 0.943),
            (rf"\boxed{{{FRAC}}}", 80, 0.547),
            (r"\boxed{\frac{64}{400}}", 20, -0.942),
            (r"\boxed{\frac{64}{400}}", 80, -0.547),
        ]
    ),
    # open-r1: Kimi length reward
    Case(
        f"{OPEN_R1} test_same_length_responses",
        "length",
        [rf"\boxed{{{FRAC}}}", r"\boxed{\frac{64}{400}}"],
        [0.0, 0.0],
        [FRAC, FRAC],
    ),
    Case(
        f"{OPEN_R1} test_different_lengths_correct_answers",
        "length",
        [rf"\boxed{{{FRAC}}}", LONGER],
        [0.5, -0.5],  # the test asserts 0.5 and less; -0.5 is its formula's value (0.5 - (len - min)/(max - min))
        [FRAC, FRAC],
    ),
    Case(
        f"{OPEN_R1} test_different_lengths_incorrect_answers",
        "length",
        [r"\boxed{\frac{64}{400}}", LONGER_WRONG],
        [0.0, -0.5],  # asserted <= 0 and decreasing; these are its formula's values
        [FRAC, FRAC],
    ),
    Case(
        f"{OPEN_R1} test_mixed_correctness",
        "length",
        [rf"\boxed{{{FRAC}}}", LONGER, r"\boxed{\frac{64}{400}}", LONGER_WRONG],
        [0.5, -0.5, 0.0, -0.5],
        [FRAC] * 4,
    ),
    Case(
        f"{OPEN_R1} test_unparseable_solution",
        "length",
        [r"\boxed{answer}", r"\boxed{answer} " + "x" * 10],
        [0.5, -0.5],
        ["unparseable_latex", "unparseable_latex"],
        differs="the gold `unparseable_latex` reads here as an expression (math-verify's ExprExtractionConfig, as "
        "math_accuracy reads golds), which `answer` does not equal: both are wrong; open-r1 parses golds as LaTeX "
        "only and counts every completion against one it cannot parse as correct (ours gives None, no signal, for a "
        "gold that does not parse at all: see trl test_unparsable_gold_yields_none)",
        ours=[0.0, -0.5],
    ),
    # open-r1: repetition penalty (word n-grams, lower-cased, as ours)
    Case(
        f"{OPEN_R1} test_positive_max_penalty_raises_value_error",
        "repetition_penalty",
        [],
        ValueError,
        kwargs={"ngram_size": 2, "max_penalty": 1.5},
    ),
    *(
        Case(f"{OPEN_R1} {name}", "repetition_penalty", texts, values, kwargs={"ngram_size": n, "max_penalty": p})
        for name, n, p, texts, values in [
            ("test_no_repetition", 2, -1.0, ["this is a test sentence"], [0.0]),
            ("test_full_repetition", 2, -1.0, ["this this this this this"], [-0.75]),
            ("test_partial_repetition", 2, -1.0, ["this is a this is a test"], [-1 / 3]),
            ("test_multiple_completions", 3, -0.5, ["this is a test", "test test test test"], [0.0, -0.25]),
            ("test_empty_completion", 2, -1.0, [""], [0.0]),
            ("test_different_ngram_size", 3, -2.0, ["this is a this is a test"], [-0.4]),
            ("test_mixed_case", 2, -1.0, ["This is A Test", "this IS a test"], [0.0, 0.0]),
            ("test_one_word_completion", 3, -1.0, ["word"], [0.0]),
            ("test_two_word_completion", 3, -1.0, ["two words"], [0.0]),
            ("test_three_word_completion", 3, -1.0, ["three different words"], [0.0]),
            ("test_three_word_repetition_completion", 3, -1.0, ["word word word word"], [-0.5]),
            ("test_four_word_completion_with_repetition", 3, -1.0, ["one two one two"], [0.0]),
            ("test_five_word_completion_with_repetition", 3, -0.5, ["A B C A B"], [0.0]),
            ("test_six_word_completion_with_repetition", 3, -1.0, ["A B C A B C"], [-0.25]),
            ("test_long_completion_with_repetition", 3, -1.0, ["A B C A B C E F G A B C A B C"], [-0.3846]),
            ("test_long_completion_without_repetition", 3, -1.0, ["A B C D E F G H I J K L"], [0.0]),
            ("test_full_repetition_with_language (en)", 2, -1.0, ["that that that that that"], [-0.75]),
        ]
    ),
    # open-r1: code format (its get_code_format_reward(language="python"))
    Case(f"{OPEN_R1} test_correct_python_format", "code_format", [CODE_GOOD], [1.0]),
    Case(f"{OPEN_R1} test_multiline_code", "code_format", [CODE_MULTILINE], [1.0]),
    *(
        Case(f"{OPEN_R1} test_incorrect_formats", "code_format", [text], [0.0])
        for text in [
            "<think>Some thinking</think><answer>Just plain text</answer>",
            "<think>Analysis</think><answer>```javascript\nconsole.log('hello');\n```</answer>",
        ]
    ),
    Case(
        f"{OPEN_R1} test_incorrect_formats (wrong order of tags)",
        "code_format",
        ["<answer>```python\ndef hello(): pass\n```</answer><think>Analysis</think>"],
        [0.0],
        differs=CODE_FORMAT_DESIGN,
        ours=[1.0],
    ),
    Case(
        f"{OPEN_R1} test_incorrect_formats (no think/answer tags)",
        "code_format",
        ["```python\ndef hello():\n    print('world')\n```"],
        [0.0],
        differs=CODE_FORMAT_DESIGN,
        ours=[1.0],
    ),
    Case(
        f"{OPEN_R1} test_incorrect_formats (no language after the fence)",
        "code_format",
        ["<think>Analysis</think><answer>```\ndef hello(): pass\n```</answer>"],
        [0.0],
        differs="a bare ``` fence is read as Python: chat models often leave the language out, and the block still "
        "runs in code_tests",
        ours=[1.0],
    ),
    Case(
        f"{OPEN_R1} test_multiple_code_blocks",
        "code_format",
        [CODE_TWO_BLOCKS],
        [1.0],
        differs="exactly one fenced block: with two, code_tests could not tell which one is the program",
        ours=[0.0],
    ),
    Case(
        f"{OPEN_R1} test_different_languages (python)",
        "code_format",
        ["<think>\nAnalysis\n</think>\n<answer>\n```javascript\nconsole.log('hello');\n```\n</answer>"],
        [0.0],
    ),
    # TRL: accuracy
    Case(
        f"{TRL} test_accuracy_reward_correct_answer",
        "math_accuracy",
        [rf"\boxed{{{FRAC}}}", rf"\boxed{{{FRAC}}}"],
        [1.0, 1.0],
        [FRAC, "63/400"],
    ),
    Case(f"{TRL} test_accuracy_reward_wrong_answer", "math_accuracy", [r"\boxed{\frac{64}{400}}"], [0.0], [FRAC]),
    Case(f"{TRL} test_accuracy_reward_wrong_answer_no_latex", "math_accuracy", [r"\boxed{3}"], [0.0], ["6"]),
    Case(
        f"{TRL} test_accuracy_reward_unparsable_gold",
        "math_accuracy",
        ["Answer is forty two.", r"Some other content. \boxed{43}."],
        [None, None],
        ["Answer is forty two.", "Answer is forty three."],
    ),
    # TRL: reasoning_accuracy_reward, the answer after the reasoning (ours: the answer span, see extract_answer_span)
    Case(
        f"{TRL} test_correct_answer_yields_unit_reward",
        "math_accuracy",
        [rf"<think> Reasoning content </think> \boxed{{{FRAC}}}", rf"Reasoning content </think> \boxed{{{FRAC}}}"],
        [1.0, 1.0],
        [FRAC, FRAC],
    ),
    Case(
        f"{TRL} test_incorrect_answer_yields_zero_reward",
        "math_accuracy",
        [r"<think> Reasoning content </think> \boxed{\frac{64}{400}}"],
        [0.0],
        [FRAC],
    ),
    Case(
        f"{TRL} test_correct_answer_in_reasoning_yields_zero_reward",
        "math_accuracy",
        [
            r"<think> My answer is \boxed{42} </think> Some other text.",
            r"<think> The answer is \boxed{42} </think> Here's a wrong answer: \boxed{43}.",
        ],
        [0.0, 0.0],
        [r"\boxed{42}", r"\boxed{42}"],
    ),
    Case(
        f"{TRL} test_incomplete_reasoning_yields_zero_reward (unclosed think)",
        "math_accuracy",
        [r"<think> Incomplete reasoning without closing tag"],
        [0.0],
        [FRAC],
    ),
    Case(
        f"{TRL} test_incomplete_reasoning_yields_zero_reward (no reasoning)",
        "math_accuracy",
        [r"Correct answer \frac{63}{400} but completely missing reasoning content"],
        [0.0],
        [FRAC],
        differs="math_accuracy scores the answer, with or without reasoning before it: asking for a think block is "
        "`format`'s job (combine them in reward_funcs); TRL's reasoning_accuracy_reward scores 0 without `</think>`",
        ours=[1.0],
    ),
    Case(
        f"{TRL} test_unparsable_gold_solution_yields_none_reward",
        "math_accuracy",
        [r"<think> Reasoning content </think> \boxed{42}"],
        [None],
        ["forty two"],
    ),
    # TRL: repetition penalty over token ids, here one word per id
    Case(
        f"{TRL} test_positive_max_penalty_raises",
        "repetition_penalty",
        [],
        ValueError,
        kwargs={"ngram_size": 2, "max_penalty": 0.5},
    ),
    *(
        Case(
            f"{TRL} {name}",
            "repetition_penalty",
            [as_words(ids) for ids in batch],
            values,
            kwargs={"ngram_size": n, "max_penalty": p},
        )
        for name, n, p, batch, values in [
            ("test_no_repetition_yields_zero", 2, -1.0, [[1, 2, 3, 4]], [0.0]),
            ("test_full_repetition_approaches_max_penalty", 2, -1.0, [[5, 5, 5, 5, 5]], [-0.75]),
            ("test_partial_repetition", 2, -1.0, [[1, 2, 1, 2, 1, 2]], [-0.6]),
            ("test_completion_shorter_than_ngram_size_yields_zero", 3, -1.0, [[1, 2]], [0.0]),
            ("test_completion_exactly_ngram_size_yields_zero", 3, -1.0, [[1, 2, 3]], [0.0]),
            ("test_empty_completion_yields_zero", 3, -1.0, [[]], [0.0]),
            ("test_max_penalty_scales_reward", 2, -0.5, [[5, 5, 5, 5, 5]], [-0.375]),
            ("test_ngram_size_changes_reward (2)", 2, -1.0, [[1, 2, 3, 1, 2, 3]], [-0.4]),
            ("test_ngram_size_changes_reward (3)", 3, -1.0, [[1, 2, 3, 1, 2, 3]], [-0.25]),
            ("test_batch_of_completions", 2, -1.0, [[1, 2, 3, 4], [5, 5, 5, 5, 5], [9]], [0.0, -0.75, 0.0]),
        ]
    ),
    # TRL: cosine-scaled length over completion_ids, here that many characters
    *(
        Case(
            f"{TRL} {name}",
            "cosine_length",
            [padded(rf"\boxed{{{guess}}}", length) for guess, length in pairs],
            values,
            [r"\frac{1}{3}"] * len(pairs),
            kwargs={"max_len": 100},
        )
        for name, pairs, values in [
            ("test_correct_shorter_rewarded_more", [(r"\frac{1}{3}", 25), (r"\frac{1}{3}", 75)], [0.92678, 0.57322]),
            ("test_wrong_longer_penalized_less", [(r"\frac{1}{2}", 25), (r"\frac{1}{2}", 75)], [-0.92678, -0.57322]),
            ("test_midpoint_values", [(r"\frac{1}{3}", 50), (r"\frac{1}{2}", 50)], [0.75, -0.75]),
            ("test_correct_boundary_values (longest)", [(r"\frac{1}{3}", 100)], [0.5]),
            ("test_wrong_boundary_values (longest)", [(r"\frac{1}{2}", 100)], [-0.5]),
            ("test_length_exceeding_max_len_is_clamped", [(r"\frac{1}{3}", 200), (r"\frac{1}{2}", 200)], [0.5, -0.5]),
        ]
    ),
    Case(
        f"{TRL} test_unparsable_gold_yields_none",
        "cosine_length",
        [padded(r"\boxed{42}", 50)],
        [None],
        ["forty two"],
        kwargs={"max_len": 100},
    ),
]

# Peer rewards (or parts of a peer test) that have no counterpart here, and why.
NO_COUNTERPART = {
    f"{OPEN_R1} test_get_reward_funcs": "open-r1's registry API; ours is rewards.get_reward_funcs, tested in "
    "test_registry.py",
    f"{OPEN_R1} test_tag_count_rewards_* (6 tests)": "no tag-count reward here: `format` scores the layout all or "
    "nothing",
    f"{OPEN_R1} test_soft_overlong_punishment_* (3 tests)": "no overlong punishment reward here (length shaping is "
    "`length` and `cosine_length`)",
    f"{OPEN_R1} test_full_repetition_with_language (zh)": "ours splits words on whitespace; no Chinese word "
    "segmentation",
    f"{OPEN_R1} test_different_languages (javascript)": "code_format checks Python only (the sandbox runs Python)",
    f"{TRL} test_valid_format / test_invalid_format / test_mixed_format": "TRL's think_format_reward scores "
    "`<think>..</think>` then free text; our `format` asks for an <answer> block too",
    f"{TRL} test_soft_overlong_punishment_* (3 tests)": "no overlong punishment reward here",
    f"{TRL} test_reward_is_picklable / test_extra_kwargs_are_ignored": "held by our own tests (test_format.py "
    "pickles every parameterised reward; every reward takes **columns)",
    f"{TRL} test_accuracy_reward_in_worker_thread": "held by our own test (test_math.py runs math_accuracy from a "
    "worker thread)",
    f"{TRL} test_correct_boundary_values / test_wrong_boundary_values (length 0)": "ours counts characters: a "
    "completion of length 0 has no answer to be right",
    f"{TRL} test_correct_answer_with_custom_tags_yields_unit_reward": "no reasoning_delimiters setting: the answer "
    "span is read by extract_answer_span",
}
