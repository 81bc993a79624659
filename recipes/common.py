"""The small shared core of the recipes: 4-bit + LoRA model loading, datasets from the hub or a local file,
generation, and pre-flight checks that fail before any model is loaded."""

import os
import time
import warnings
from pathlib import Path

import torch
from transformers import AutoModelForCausalLM, AutoTokenizer, PreTrainedModel
from trl import ModelConfig, get_quantization_config

from rewards._cli import UserError, one_line_errors

# peft 0.21 and TRL 1.12 (PPO, unwrap_model_for_generation) read transformers 5's deprecated
# `model.is_gradient_checkpointing`; nothing here does, and the user cannot act on the warning.
warnings.filterwarnings("ignore", message="`is_gradient_checkpointing` is deprecated", category=FutureWarning)

LOCAL_SUFFIXES = {".jsonl": "json", ".json": "json", ".parquet": "parquet", ".csv": "csv"}


def rss_mb(field: str = "VmRSS") -> float | None:
    """This process's resident memory (VmRSS) or its peak (VmHWM) in MiB, from /proc (Linux); None elsewhere."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith(field + ":"):
                return int(line.split()[1]) / 1024
    except OSError:
        return None
    return None


# The runtime alone (Python, torch, transformers, TRL imported; no model yet): what a CPU peak sits on top of.
RSS_BEFORE_MODEL_MB = rss_mb()
PROCESS_START = time.time()


def resolve_dtype(model_args: ModelConfig) -> ModelConfig:
    """bf16 compute on a GPU, fp32 on CPU (bitsandbytes' CPU 4-bit kernels and CPU training want fp32)."""
    if model_args.dtype in (None, "auto"):
        model_args.dtype = "bfloat16" if torch.cuda.is_available() else "float32"
    return model_args


def check_4bit_supported(model_args: ModelConfig) -> None:
    """Fail early, with the reason, where bitsandbytes cannot run the requested quantization."""
    if not (model_args.load_in_4bit or model_args.load_in_8bit):
        return
    try:
        import bitsandbytes  # noqa: F401
    except Exception as error:  # noqa: BLE001 - a broken native library raises anything at import
        raise RuntimeError(f"4-bit/8-bit loading requested, but bitsandbytes cannot be imported: {error}") from error
    if model_args.load_in_8bit and not torch.cuda.is_available():
        raise RuntimeError("load_in_8bit needs a CUDA GPU with this bitsandbytes; use load_in_4bit on CPU")


def model_kwargs(model_args: ModelConfig) -> dict:
    """from_pretrained kwargs: dtype, attention and, when asked, the 4-bit NF4 config from TRL's own helper."""
    resolve_dtype(model_args)
    kwargs = {"revision": model_args.model_revision, "dtype": getattr(torch, model_args.dtype),
              "attn_implementation": model_args.attn_implementation}
    quantization_config = get_quantization_config(model_args)
    if quantization_config is not None:
        kwargs["quantization_config"] = quantization_config
        kwargs["device_map"] = {"": torch.cuda.current_device()} if torch.cuda.is_available() else {"": "cpu"}
    return kwargs


def load_model(model_args: ModelConfig, model_class=AutoModelForCausalLM, **extra):
    check_4bit_supported(model_args)
    return model_class.from_pretrained(model_args.model_name_or_path, **model_kwargs(model_args), **extra)


def load_tokenizer(model_args: ModelConfig):
    tokenizer = AutoTokenizer.from_pretrained(model_args.model_name_or_path, revision=model_args.model_revision)
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    return tokenizer


# What `datasets`' builders decompress by themselves (fsspec infers it from the extension; .zst and .lz4 need the
# zstandard / lz4 packages, which the pinned stack does not install).
COMPRESSIONS = (".gz", ".bz2", ".xz", ".zst", ".lz4")


def local_format(path: Path) -> str | None:
    """The `datasets` builder for a local data file, compressed or not: train.jsonl.gz -> "json".

    >>> [local_format(Path(p)) for p in ("a.jsonl", "HumanEval.jsonl.gz", "b.csv.xz", "c.gz", "d.txt")]
    ['json', 'json', 'csv', None, None]
    """
    suffixes = path.suffixes
    if suffixes and suffixes[-1] in COMPRESSIONS:
        suffixes = suffixes[:-1]
    return LOCAL_SUFFIXES.get(suffixes[-1]) if suffixes else None


class DataError(UserError, ValueError):
    """Malformed user data: the entry points report it in one line, naming the file and what is wrong."""


class MissingDataFile(UserError, FileNotFoundError):
    """A local data file or folder that is not there (a FileNotFoundError, reported in one line)."""


def is_local_dataset(name: str) -> bool:
    return local_format(Path(name)) is not None or os.path.sep in name and Path(name).exists()


def load_data(name: str, split: str = "train", config: str | None = None, required_columns=()):
    """A dataset split from a local JSONL/JSON/Parquet/CSV file (also .gz/.bz2/.xz/.zst/.lz4-compressed) or folder,
    or from the hub by id."""
    import datasets

    if is_local_dataset(name):
        path = Path(name)
        if not path.exists():
            raise MissingDataFile(f"dataset file {name} does not exist")
        files = sorted(p for p in path.iterdir() if local_format(p)) if path.is_dir() else [path]
        if not files:
            raise MissingDataFile(f"dataset directory {name} holds no {'/'.join(LOCAL_SUFFIXES)} file (optionally "
                                  f"compressed: {'/'.join(COMPRESSIONS)})")
        builder = local_format(files[0])
        if builder is None:
            raise DataError(f"dataset file {name}: unknown format; use {'/'.join(LOCAL_SUFFIXES)}, optionally "
                            f"compressed ({'/'.join(COMPRESSIONS)})")
        split_files = [f for f in files if f.name.startswith(split)] if path.is_dir() else files
        if not split_files:
            raise MissingDataFile(f"dataset directory {name} has no file for split {split!r}")
        dataset = datasets.load_dataset(builder, data_files=[str(f) for f in split_files], split="train")
    else:
        try:
            dataset = datasets.load_dataset(name, config, split=split)
        except datasets.exceptions.DatasetNotFoundError as error:
            raise DataError(f"unknown dataset {name!r} (not a local file, not on the hub): {error}") from error
    require_columns(dataset, required_columns, name)
    return dataset


def warn_unparseable_golds(dataset, reward_names, source: str, column: str = "answer") -> list[tuple[int, str]]:
    """Gold answers math_accuracy cannot parse are a data problem: their samples score None and teach nothing.
    Says how many, with the first few, before any model loads (when a chosen reward reads `answer`)."""
    from rewards import required_columns
    from rewards.math import unparseable_golds

    if column not in required_columns(reward_names):
        return []
    bad = unparseable_golds(dataset[column])
    if bad:
        print(f"warning: {len(bad)} of {len(dataset)} gold answers in {source} (column {column!r}) cannot be parsed; "
              "math_accuracy scores their samples None (left out of the reward): "
              + ", ".join(f"row {i}: {gold[:60]!r}" for i, gold in bad[:5]) + (", ..." if len(bad) > 5 else ""))
    return bad


def with_code_test_columns(dataset, reward_names, source: str):
    """For code_tests: the dataset's own test columns (this project's `tests`, MBPP's `test_list`, HumanEval's
    `test` + `entry_point` + `prompt`) mapped to `tests` / `setup` / `code_prefix`, before `prompt` is rebuilt as
    chat messages. Fails before any model loads when the dataset has none of them."""
    from rewards.code import code_test_columns, require_code_tests

    if "code_tests" not in reward_names:
        return dataset
    try:
        require_code_tests(dataset.column_names, source)
    except ValueError as error:
        raise DataError(str(error)) from error
    return dataset.map(code_test_columns)


def require_columns(dataset, columns, source: str) -> None:
    missing = [c for c in columns if c not in dataset.column_names]
    if missing:
        raise DataError(f"dataset {source} is missing column(s) {missing}; it has {dataset.column_names}")


@torch.no_grad()
def generate(model, tokenizer, prompts: list, max_new_tokens: int = 128, batch_size: int = 64,
             temperature: float = 0.0, num_return_sequences: int = 1) -> list[list[str]]:
    """Batched generation for chat prompts (lists of messages) or plain strings; greedy when temperature is 0.

    Returns, per prompt, `num_return_sequences` completions (special tokens removed).
    """
    tokenizer.padding_side = "left"
    model.eval()
    outputs = []
    device = next(model.parameters()).device
    for start in range(0, len(prompts), batch_size):
        batch = prompts[start:start + batch_size]
        texts = [p if isinstance(p, str) else tokenizer.apply_chat_template(p, tokenize=False,
                                                                            add_generation_prompt=True)
                 for p in batch]
        enc = tokenizer(texts, return_tensors="pt", padding=True, add_special_tokens=False).to(device)
        sampling = {"do_sample": True, "temperature": temperature, "top_k": 0, "top_p": 1.0} if temperature > 0 \
            else {"do_sample": False}
        generated = model.generate(**enc, max_new_tokens=max_new_tokens, num_return_sequences=num_return_sequences,
                                   pad_token_id=tokenizer.pad_token_id, **sampling)
        completions = tokenizer.batch_decode(generated[:, enc["input_ids"].shape[1]:], skip_special_tokens=True)
        outputs.extend(completions[i:i + num_return_sequences]
                       for i in range(0, len(completions), num_return_sequences))
    return outputs


# ---------------------------------------------------------------------------------------------------------------
# Run directories, resume, metrics, graceful SIGTERM
# ---------------------------------------------------------------------------------------------------------------

def parse_config(parser):
    """TrlParser.parse_args_and_config, with the config file named in errors (unknown keys are errors)."""
    import sys

    one_line_errors()
    config = sys.argv[sys.argv.index("--config") + 1] if "--config" in sys.argv[:-1] else None
    if config and not Path(config).is_file():
        raise SystemExit(f"error: config file {config} does not exist; the shipped ones: "
                         + ", ".join(str(p) for p in sorted(Path("recipes/configs").glob("*/*.yaml"))))
    if "gradient_checkpointing" not in (Path(config).read_text() if config else "") + " ".join(sys.argv):
        # TRL 1.12's configs default the name transformers 5 deprecated (gradient_checkpointing=True), so every
        # config that does not set activation_checkpointing warns; only a user who wrote the old name is told.
        warnings.filterwarnings("ignore", message="`gradient_checkpointing` is deprecated", category=FutureWarning)
    try:
        return parser.parse_args_and_config()
    except ValueError as error:
        raise SystemExit(f"error in {config or 'command line'}: {error}") from error


def default_output_dir(method: str, profile: str) -> str:
    return f"runs/{method}-{profile}-{time.strftime('%Y%m%d-%H%M%S')}"


def complete_checkpoints(output_dir: str | Path) -> list[Path]:
    """checkpoint-N folders, oldest first; only those whose save finished (trainer_state.json is written last)."""
    output_dir = Path(output_dir)
    if not output_dir.is_dir():
        return []
    found = [p for p in output_dir.glob("checkpoint-*") if p.name.split("-")[-1].isdigit()
             and (p / "trainer_state.json").exists()]
    return sorted(found, key=lambda p: int(p.name.split("-")[-1]))


def resolve_run_dir(training_args, method: str, profile: str) -> str | None:
    """Sets output_dir (runs/<method>-<profile>-<timestamp> unless given) and returns the checkpoint to resume.

    `resume_from_checkpoint: latest` resumes the newest complete checkpoint of output_dir, or, when output_dir is
    not given, of the newest runs/<method>-<profile>-* folder.
    """
    resume = training_args.resume_from_checkpoint
    if training_args.output_dir in (None, "", "trainer_output"):
        runs = sorted(Path("runs").glob(f"{method}-{profile}-*")) if resume == "latest" else []
        training_args.output_dir = str(runs[-1]) if runs else default_output_dir(method, profile)
    if resume == "latest":
        checkpoints = complete_checkpoints(training_args.output_dir)
        if not checkpoints:
            raise SystemExit(f"resume_from_checkpoint=latest: no complete checkpoint in {training_args.output_dir}")
        resume = str(checkpoints[-1])
    elif resume and not Path(resume).is_dir():
        raise SystemExit(f"resume_from_checkpoint: {resume} is not a directory")
    training_args.resume_from_checkpoint = resume
    return resume


def library_versions() -> dict[str, str]:
    from importlib.metadata import PackageNotFoundError, version

    versions = {}
    for package in ("torch", "transformers", "trl", "peft", "bitsandbytes", "datasets", "accelerate", "math-verify"):
        try:
            versions[package] = version(package)
        except PackageNotFoundError:
            versions[package] = "not installed"
    return versions


def write_run_files(output_dir: str, *configs) -> None:
    """The resolved config (every dataclass the parser filled) and library versions, beside the adapter."""
    import dataclasses
    import json

    import yaml

    out = Path(output_dir)
    out.mkdir(parents=True, exist_ok=True)
    resolved = {}
    for config in configs:
        # json first: enums and dtypes become their plain string values
        resolved.update(json.loads(json.dumps(dataclasses.asdict(config), default=str)))
    (out / "config.yaml").write_text(yaml.safe_dump(resolved, sort_keys=True))
    from rewards.sandbox import isolation_record

    # which isolation code rewards get here (rewards.sandbox): "root", "userns", "unisolated" or "unavailable"
    record = library_versions() | {"sandbox_isolation": isolation_record()}
    (out / "versions.json").write_text(json.dumps(record, indent=2) + "\n")


# Seconds, calls and completions spent in each reward function during training (TimedReward), for cost.json.
REWARD_TIME: dict[str, dict[str, float]] = {}


class TimedReward:
    """A reward function that adds its wall time to REWARD_TIME: what a code reward's sandbox costs per step.
    A class, not a closure, so it pickles like the rewards it wraps."""

    def __init__(self, func):
        self.func = func
        self.__name__ = getattr(func, "__name__", type(func).__name__)

    def __call__(self, completions, **columns):
        start = time.perf_counter()
        scores = self.func(completions, **columns)
        spent = REWARD_TIME.setdefault(self.__name__, {"seconds": 0.0, "calls": 0, "completions": 0})
        spent["seconds"] += time.perf_counter() - start
        spent["calls"] += 1
        spent["completions"] += len(completions)
        return scores


def run_callbacks(output_dir: str, measure_tensors: bool = False) -> list:
    """metrics.jsonl logging, cost.json (memory, time) and graceful SIGTERM (save a checkpoint, then stop) for any
    transformers Trainer."""
    import json
    import signal

    from transformers import TrainerCallback

    class MetricsLogger(TrainerCallback):
        def on_log(self, args, state, control, logs=None, **kwargs):
            if state.is_world_process_zero and logs:
                with open(Path(output_dir) / "metrics.jsonl", "a") as fh:
                    fh.write(json.dumps({"step": state.global_step, **logs}) + "\n")

    class StopOnSigterm(TrainerCallback):
        """SIGTERM (a scheduler's preemption, `kill`) saves a checkpoint at the end of the current step and exits."""

        def __init__(self):
            self.requested = False
            signal.signal(signal.SIGTERM, self._request)

        def _request(self, signum, frame):
            self.requested = True

        def on_step_end(self, args, state, control, **kwargs):
            if self.requested:
                control.should_save = True
                control.should_training_stop = True
            return control

        def on_save(self, args, state, control, **kwargs):
            if self.requested:  # PPO's loop ignores should_training_stop: leave once the checkpoint is on disk
                raise SystemExit(f"SIGTERM: saved checkpoint-{state.global_step} in {args.output_dir}; stopping")

    class CostMeter(TrainerCallback):
        """cost.json: what training cost, measured in-process. Peak memory excludes the model load's transient:
        torch.cuda.max_memory_allocated on a GPU; on a CPU the peak RSS since training began (the kernel's
        high-water mark, reset through /proc/self/clear_refs). Also wall-clock training seconds, optimizer steps,
        trainable parameters and the number of 4-bit base models held (PPO's critic is a second one)."""

        def on_train_begin(self, args, state, control, model=None, **kwargs):
            self.meter = None
            if measure_tensors:  # the bytes of live tensors, as max_memory_allocated counts them on a GPU
                from eval.memory_meter import LiveTensorMeter, model_tensors

                self.meter = LiveTensorMeter()
                self.meter.track(model_tensors(model) if model else [])
                self.model_bytes, self.between_steps_bytes = self.meter.live_bytes, 0
                self.meter.__enter__()
            self.start = time.time()
            REWARD_TIME.clear()
            self.trainable = sum(p.numel() for p in model.parameters() if p.requires_grad) if model else None
            # a loaded base model carries its quantizer; PEFT wrappers only forward the attribute lookups
            self.bases = sum(1 for m in model.modules()
                             if isinstance(m, PreTrainedModel) and getattr(m, "hf_quantizer", None)) if model else None
            if torch.cuda.is_available():
                torch.cuda.reset_peak_memory_stats()
                return
            self.rss_at_train_begin = rss_mb()
            try:
                Path("/proc/self/clear_refs").write_text("5")  # 5: reset the peak RSS to the current RSS
                self.measure = "peak RSS since training began (VmHWM after a reset)"
            except OSError:
                self.measure = "peak RSS over the process's lifetime (ru_maxrss; VmHWM could not be reset)"

        def on_step_end(self, args, state, control, **kwargs):
            if self.meter is not None:  # what stays live from one step to the next: model + optimizer state
                self.between_steps_bytes = max(self.between_steps_bytes, self.meter.live_bytes)

        def on_save(self, args, state, control, **kwargs):
            # when each checkpoint was taken, in training seconds: accuracy against compute (eval.comparison)
            if state.is_world_process_zero:
                with open(Path(output_dir) / "checkpoints.jsonl", "a") as fh:
                    fh.write(json.dumps({"step": state.global_step, "train_seconds": time.time() - self.start}) + "\n")

        def on_train_end(self, args, state, control, **kwargs):
            if self.meter is not None:
                self.meter.__exit__(None, None, None)
            record = {"train_seconds": time.time() - self.start, "train_steps": state.global_step,
                      "trainable_params": self.trainable, "models_in_memory": self.bases,
                      "reward_time": {name: dict(spent) for name, spent in REWARD_TIME.items()},
                      "peak_tensor_mb": self.meter.peak_bytes / 2**20 if self.meter else None}
            if self.meter is not None:
                record["tensor_mb"] = {"model": self.model_bytes / 2**20,
                                       "between_steps": self.between_steps_bytes / 2**20,
                                       "peak": self.meter.peak_bytes / 2**20}
            if torch.cuda.is_available():
                record |= {"peak_memory_mb": torch.cuda.max_memory_allocated() / 2**20,
                           "max_memory_allocated_mb": torch.cuda.max_memory_allocated() / 2**20,
                           "measure": "torch.cuda.max_memory_allocated", "device": torch.cuda.get_device_name()}
            else:
                import resource

                peak = rss_mb("VmHWM") or resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
                record |= {"peak_memory_mb": peak, "measure": self.measure, "device": "cpu",
                           "rss_before_model_mb": RSS_BEFORE_MODEL_MB,
                           "rss_at_train_begin_mb": self.rss_at_train_begin}
            if state.is_world_process_zero:
                (Path(output_dir) / "cost.json").write_text(json.dumps(record, indent=2) + "\n")

    return [MetricsLogger(), StopOnSigterm(), CostMeter()]


# What each method logs as its training signal: the reward for GRPO and PPO, the preference margin for DPO/ORPO.
REWARD_KEYS = {"grpo": "reward", "ppo": "objective/scores", "dpo": "rewards/margins", "orpo": "rewards/margins"}


def read_metrics(run_dir: str | Path) -> list[dict]:
    """Every logged row of a run's metrics.jsonl (empty if the run logged nothing)."""
    import json

    path = Path(run_dir) / "metrics.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()] if path.is_file() else []


def reward_curve(run_dir: str | Path, key: str) -> list[tuple[int, float]]:
    return [(row["step"], row[key]) for row in read_metrics(run_dir) if key in row]


def first_last(curve: list[tuple[int, float]]) -> tuple[float | None, float | None]:
    """Mean of the first and of the last fifth of the logged values: single steps are too noisy.

    >>> first_last([(1, 0.0), (2, 0.5), (3, 0.5), (4, 0.5), (5, 1.0)])
    (0.0, 1.0)
    """
    if not curve:
        return None, None
    n = max(1, len(curve) // 5)
    values = [v for _, v in curve]
    return sum(values[:n]) / n, sum(values[-n:]) / n


def eval_task_for(profile: str, reward_names=()) -> str:
    """The `make eval` task that measures what a run trained for."""
    if profile in ("tiny", "tiny-code"):
        return profile
    return "mbpp" if "code_tests" in reward_names or "code" in profile else "gsm8k"


def finish_run(trainer, method: str, output_dir: str, model_name: str, profile: str, reward_names=()) -> dict:
    """The end of every recipe: the run's plot, summary.json, and a short summary with the next commands (rank 0).
    A distributed launch also gets one line per rank, so it shows that every rank got to the end."""
    import json

    import torch.distributed as dist

    state = trainer.accelerator.state
    if state.num_processes > 1:
        backend = dist.get_backend() if dist.is_available() and dist.is_initialized() else "none"
        print(f"[rank {state.process_index}/{state.num_processes}, backend {backend}] finished")
    if not trainer.is_world_process_zero():
        return {}
    from eval.plot import plot_runs

    out = Path(output_dir)
    cost_path = out / "cost.json"
    cost = json.loads(cost_path.read_text()) if cost_path.is_file() else {}
    key = REWARD_KEYS[method]
    curve = reward_curve(out, key)
    first, last = first_last(curve)
    plot = plot_runs([out], out / "metrics.png")
    task = eval_task_for(profile, reward_names)
    summary = {
        "method": method, "steps": trainer.state.global_step, "wall_seconds": round(time.time() - PROCESS_START, 1),
        "train_seconds": cost.get("train_seconds"), "signal": key, "signal_first": first, "signal_last": last,
        "peak_memory_mb": cost.get("peak_memory_mb"), "memory_measure": cost.get("measure"), "adapter": str(out),
        "plot": str(plot) if plot else None,
        "next": [f"make eval MODEL={model_name} ADAPTER={out} TASK={task}", f"make plot RUN={out}"],
    }
    (out / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")
    signal = (f"{key} {first:.3f} -> {last:.3f} (mean of the first and last fifth of {len(curve)} logged steps)"
              if first is not None else f"{key}: not logged")
    memory = f"{summary['peak_memory_mb']:,.0f} MB ({summary['memory_measure']})" if cost else "not measured"
    print(f"\n{method.upper()} finished: {summary['steps']} steps in {summary['wall_seconds']:.0f} s "
          f"({summary['train_seconds'] or 0:.0f} s training)\n"
          f"  {signal}\n  peak memory {memory}\n  adapter  {out}\n"
          + (f"  plot     {plot}\n" if plot else "")
          + f"next:\n  {summary['next'][0]}   # held-out accuracy\n  {summary['next'][1]}   # redraw the plot\n")
    return summary


def prompt_text(row: dict, prompt_column: str, prompt_template: str | None = None) -> str:
    r"""The user message for a row: its `prompt_column`, or `prompt_template` filled from the row's columns (a list
    column as one item per line), e.g. MBPP's tests shown under the task.

    >>> prompt_text({"text": "Add one.", "test_list": ["assert f(1) == 2", "assert f(2) == 3"]}, "text",
    ...             "{text}\nTests:\n{test_list}")
    'Add one.\nTests:\nassert f(1) == 2\nassert f(2) == 3'
    """
    if not prompt_template:
        return row[prompt_column]
    return prompt_template.format(**{k: "\n".join(map(str, v)) if isinstance(v, list) else v for k, v in row.items()})


def prompt_columns(prompt_column: str, prompt_template: str | None = None) -> list[str]:
    """The columns a prompt is built from, for the pre-flight column check.

    >>> prompt_columns("text", "{text} Tests: {test_list}")
    ['text', 'test_list']
    """
    import string

    if not prompt_template:
        return [prompt_column]
    return list(dict.fromkeys(name for _, name, _, _ in string.Formatter().parse(prompt_template) if name))


def prompt_messages(question: str, system_prompt: str | None) -> list[dict]:
    messages = [{"role": "system", "content": system_prompt}] if system_prompt else []
    return messages + [{"role": "user", "content": question}]
