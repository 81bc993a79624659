"""The recipes' shared arguments, each field documented once: a recipe's own class subclasses the ones it uses and
declares only what is its own (as open-r1's `GRPOScriptArguments` subclasses its `ScriptArguments`).

They do not subclass TRL's `ScriptArguments`: of its fields the recipes honour only the three `DataArguments`
declares, and a recipe would silently ignore the others (`dataset_streaming`, `dataset_test_split`,
`gradient_checkpointing_use_reentrant`, `ignore_bias_buffers`). `reward_weights` is not here: GRPO reads it from
`GRPOConfig` (TRL weighs the rewards with it), and HfArgumentParser refuses a field name in two dataclasses; the
recipes without it in their TRL config take it from `RewardWeightArguments`.
"""

from dataclasses import dataclass, field

from rewards.time_limit import REWARD_TIMEOUT_SECONDS
from tasks.registry import TASKS

# After SIGTERM, how long a step may take to end on its own: below the 30 s that Slurm (KillWait) and Kubernetes
# (terminationGracePeriodSeconds) wait by default before SIGKILL, so the last finished step is saved in time.
STOP_GRACE_SECONDS = 20.0


@dataclass
class DataArguments:
    """The rows a recipe reads.

    Args:
        dataset_name: a hub id, or a local .jsonl/.json/.parquet/.csv file (compressed or not) or folder.
        dataset_config: the hub dataset's configuration name.
        dataset_train_split: the split to read.
        drop_incomplete_rows: drop the rows whose columns the recipe reads (prompt and golds, or prompt, chosen and
            rejected) are missing or empty, with a count; else such rows are refused.
    """

    dataset_name: str = field(metadata={"help": "hub id, or a local .jsonl/.json/.parquet/.csv file or folder"})
    dataset_config: str | None = None
    dataset_train_split: str = "train"
    drop_incomplete_rows: bool = field(
        default=False,
        metadata={
            "help": "drop rows whose prompt, gold, chosen or rejected column is missing or empty (else refused)"
        },
    )


@dataclass
class PromptArguments(DataArguments):
    """How a row becomes a chat prompt (GRPO, PPO, `make pairs`, and `make eval` on your own task).

    Args:
        task: a task of `tasks.registry.TASKS` whose problems these are: its prompt column, template, system prompt
            and shown tests, as `make eval` asks them (a config naming a task sets none of them itself; one that
            differs is refused).
        prompt_column: the column whose text is the user message (default `question`).
        prompt_template: the user message built from the row's columns instead, e.g.
            '{text}\\nTests:\\n{test_list}' (a list column as one item per line).
        system_prompt: a system message before it.
        exclude_problems: problems that must never train (an evaluation set): a local file or a hub id, with
            `:split` (e.g. HuggingFaceH4/MATH-500:test); training rows whose prompt column's text (whitespace
            normalised) is one of its rows' are dropped, with a count.
        shown_tests: code tasks with MBPP's `test_list`: put the first N asserts in the prompt (`{tests_shown}` in
            prompt_template) and score only the rest, so that hard-coding what the prompt shows cannot pass.
        truncate_long_prompts: cut prompts longer than the model has room for from their start; else refused.
    """

    task: str | None = field(
        default=None,
        metadata={"help": "a task (tasks.registry) whose prompt these rows are asked with, as make eval asks them"},
    )
    prompt_column: str | None = field(default=None, metadata={"help": "the column whose text is the user message"})
    prompt_template: str | None = field(
        default=None,
        metadata={
            "help": "user message built from the row's columns, e.g. '{text}\\nTests:\\n{test_list}'; "
            "else prompt_column"
        },
    )
    system_prompt: str | None = None
    exclude_problems: str | None = field(
        default=None,
        metadata={"help": "an evaluation set whose problems never train: a local file, or hub id[:split]"},
    )
    shown_tests: int | None = field(
        default=None,
        metadata={
            "help": "MBPP-style code tasks: the first N asserts go in the prompt ({tests_shown}), only the rest are "
            "scored (None: every test shown and scored)"
        },
    )
    truncate_long_prompts: bool = field(
        default=False, metadata={"help": "cut prompts longer than the model has room for (else refused)"}
    )

    def __post_init__(self):
        if self.task is not None:
            if self.task not in TASKS:
                raise ValueError(f"task {self.task!r} is not a task; the tasks: {', '.join(TASKS)}")
            for key, value in TASKS[self.task].prompt_settings.items():
                given = getattr(self, key)
                if given is not None and given != value:
                    raise ValueError(
                        f"{key} {given!r} differs from task {self.task}'s {value!r}: the task defines how its "
                        f"problems are asked (tasks/registry.py); drop {key} or the task"
                    )
                setattr(self, key, value)
        if self.prompt_column is None:
            self.prompt_column = "question"


@dataclass
class RewardArguments:
    """The rule-based rewards a run scores with.

    Args:
        reward_funcs: registered reward names (rewards.REWARDS) or dotted paths to functions of your own.
        reward_kwargs: reward name -> keyword arguments it is called with.
        reward_timeout: seconds one reward call may run before the run stops, saved (0: no limit).
    """

    reward_funcs: list[str] = field(default_factory=lambda: ["math_accuracy"])
    reward_kwargs: dict = field(default_factory=dict, metadata={"help": "reward name -> keyword arguments"})
    reward_timeout: float = field(
        default=REWARD_TIMEOUT_SECONDS,
        metadata={"help": "seconds one reward call may run before the run stops, saved (0: no limit)"},
    )


@dataclass
class RewardWeightArguments:
    """Args:
    reward_weights: one weight per reward (default 1.0 each); the score is their weighted sum.
    """

    reward_weights: list[float] | None = None


@dataclass
class RunArguments:
    """A training run (GRPO, PPO, DPO, ORPO): its folder, log-prob path and stop.

    Args:
        profile: the config profile (tiny, tiny-code, 7b, 7b-code), in the run folder's default name.
        reuse_output_dir: write into an output_dir that holds another run's files (they move aside, to
            previous-<time>/ inside it).
        max_train_samples: train on the first N rows only.
        logprobs: `full`, TRL's computation (full-vocabulary logits); `chunked`, per-token log-probs from hidden
            states in chunks (core.logprobs, the 7B memory path).
        stop_grace_seconds: after SIGTERM or Ctrl-C, seconds the current step may take to end before it is
            interrupted (the last finished step is saved).
        measure_tensor_memory: also measure the peak of live tensor bytes (core.training.memory_meter) into
            cost.json; slows training.
    """

    profile: str = "tiny"
    reuse_output_dir: bool = field(
        default=False, metadata={"help": "write into an output_dir that holds another run's files (moved aside)"}
    )
    max_train_samples: int | None = None
    logprobs: str = field(
        default="full",
        metadata={
            "help": "full: TRL's computation (full-vocabulary logits); chunked: core.logprobs, per-token log-probs "
            "from hidden states in chunks (the 7B memory path)"
        },
    )
    stop_grace_seconds: float = field(
        default=STOP_GRACE_SECONDS,
        metadata={
            "help": "after SIGTERM or Ctrl-C, seconds the current step may take to end before it is interrupted "
            "(the last finished step is saved)"
        },
    )
    measure_tensor_memory: bool = field(
        default=False,
        metadata={
            "help": "measure the peak of live tensor bytes (core.training.memory_meter) into cost.json; slows training"
        },
    )
