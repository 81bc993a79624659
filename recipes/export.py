"""Turn a finished run into a model people use: the base in full precision (bf16/fp16/fp32, never the 4-bit weights
a QLoRA run trained on), the run's LoRA adapter merged into it, saved as an ordinary model folder (safetensors,
tokenizer, chat template, generation config, a model card, export.json), checked on the run's held-out problems.

Usage:
    make export RUN=runs/grpo-tiny-20261204-101500 [OUT=exports/my-model]
    python -m recipes.export --run runs/grpo-tiny-... --out exports/my-model --dtype bfloat16
    python -m recipes.export --run runs/grpo-7b-... --push_to_hub --hub_model_id you/qwen2.5-7b-grpo-gsm8k

The check, printed and kept in export.json: greedy on the problems the run held out (its own last held-out
evaluation's task, data and count; else its profile's task), the exported folder loaded back with plain
`AutoModelForCausalLM.from_pretrained` against the adapter on the same-precision base (the same extracted answer on at
least 98% of problems, accuracies within 1 point), and beside them the run's own held-out number as it trained (4-bit
when it did: the base's rounding, not the merge, separates them). A failed check leaves the folder at OUT.partial
with its reasons and exits non-zero; nothing is written to OUT. `--push_to_hub` uploads the checked folder to
`hub_model_id` (needs the hub and a token: not testable offline, where this project's tests run).
"""

import json
import shutil
from dataclasses import dataclass, field
from pathlib import Path

from trl import ModelConfig, TrlParser

from core.errors import UserError
from core.evaluation.benchmarks import TASKS
from core.evaluation.scoring import score_rows
from core.export.card import model_card
from core.export.check import MAX_ACCURACY_GAP, compare
from core.export.merge import DTYPES, base_with_adapter, export_dtype, load_exported, release, save_merged
from core.inputs.config import Sources, parse_config
from core.inputs.models import check_model
from core.report.finished import heldout_problems, run_record, trained_precision
from core.runs.provenance import commit, cpu
from core.runs.storage import write_text_whole


@dataclass
class ExportArguments:
    """`make export`'s arguments.

    Args:
        run: the finished run folder (its adapter, config.yaml, summary.json).
        out: where to save the model (default exports/<run folder's name>); must not exist yet.
        dtype: the precision to merge and save in; auto: the base checkpoint's own.
        merge_into: original (the base checkpoint's weights) or, for a 4-bit run, dequantized (the 4-bit weights it
            trained on, in dtype: the model as trained).
        task: the held-out task of the check (default: the run's own held-out task, else its profile's).
        data: that task's problems, a local file (default: the run's, else the task's).
        limit: how many problems the check scores (default: as many as the run's held-out evaluation, else 200).
        batch_size: problems generated at once.
        push_to_hub: upload the checked folder to hub_model_id.
        hub_model_id: the hub repository to push to (you/name).
    """

    run: str = field(kw_only=True, metadata={"help": "the finished run folder"})
    out: str | None = None
    dtype: str = field(default="auto", metadata={"help": f"one of {', '.join(DTYPES)} (auto: the base's own)"})
    merge_into: str = field(
        default="original",
        metadata={
            "help": "original: the base checkpoint's full-precision weights; dequantized (a 4-bit run): the 4-bit "
            "weights it trained on, dequantized to dtype"
        },
    )
    task: str | None = field(default=None, metadata={"help": f"the check's task: {', '.join(TASKS)}"})
    data: str | None = None
    limit: int | None = None
    batch_size: int = 64
    push_to_hub: bool = False
    hub_model_id: str | None = None


def main(args: ExportArguments, sources: Sources = Sources()):
    # ----- the run, checked before any model loads -----
    run = Path(args.run)
    summary, config = run_record(run)
    versions = json.loads((run / "versions.json").read_text()) if (run / "versions.json").is_file() else {}
    base = config["model_name_or_path"]
    check_model(ModelConfig(model_name_or_path=base), f"{run}/config.yaml")
    out = Path(args.out or f"exports/{run.resolve().name}")
    partial = out.with_name(out.name + ".partial")
    if out.exists():
        raise UserError(f"out {out} (from {sources.of('out')}) exists: choose another OUT, or remove it first")
    if args.push_to_hub and not args.hub_model_id:
        raise UserError("push_to_hub needs hub_model_id (you/name): the hub repository to upload to")
    if args.limit is not None and args.limit < 1:
        raise UserError(f"limit {args.limit} (from {sources.of('limit')}) must be >= 1")
    precision = export_dtype(base, args.dtype)
    if args.merge_into not in ("original", "dequantized"):
        raise UserError(f"merge_into {args.merge_into!r} (from {sources.of('merge_into')}): original or dequantized")
    four_bit = bool(config.get("load_in_4bit"))
    if args.merge_into == "dequantized" and not four_bit:
        raise UserError(
            f"merge_into dequantized: {run} trained on full-precision weights, there is nothing to dequantize"
        )
    quantized = None
    if args.merge_into == "dequantized":  # the run's own quantization settings, as it loaded the base
        keys = ("use_bnb_nested_quant", "bnb_4bit_quant_type", "bnb_4bit_quant_storage", "dtype")
        quantized = ModelConfig(
            model_name_or_path=base, load_in_4bit=True, **{k: config[k] for k in keys if k in config}
        )

    # ----- the held-out problems: the run's own, as it last evaluated them -----
    task, data, rows, trained = heldout_problems(run, config, args.task, args.data, args.limit)

    # ----- the adapter on the base in the export's precision -----
    model, tokenizer = base_with_adapter(base, str(run), precision, quantized)
    adapter_records = score_rows(model, tokenizer, task, rows, batch_size=args.batch_size)

    # ----- merged, saved, loaded back as a user loads it -----
    shutil.rmtree(partial, ignore_errors=True)
    save_merged(model, tokenizer, partial)
    del model
    release()
    exported, exported_tokenizer = load_exported(partial, precision)
    merged_records = score_rows(exported, exported_tokenizer, task, rows, batch_size=args.batch_size)
    del exported
    release()

    # ----- the check, the card, the folder -----
    weights = f"{precision}, the 4-bit weights dequantized" if quantized else precision
    check = compare(adapter_records, merged_records, trained, trained_precision(config), weights)
    line = check.describe()
    record = {
        "run": str(run),
        "base": base,
        "method": summary["method"],
        "task": task,
        "data": data,
        "check": check.record() | {"line": line},
        "precision": precision,
        "merge_into": args.merge_into,
        "commit": commit(),
        **cpu(),
    }
    write_text_whole(partial / "export.json", json.dumps(record, indent=2) + "\n")
    write_text_whole(partial / "README.md", model_card(str(run), summary, config, versions, record["check"], record))
    if not check.passed:
        raise SystemExit(f"error: {line}; the folder is kept at {partial} for a look, nothing written to {out}")
    partial.rename(out)
    print(f"exported {summary['method'].upper()} run {run} ({base} + adapter, merged in {precision}) -> {out}")
    print(line)
    if check.trained_accuracy is not None and check.trained_accuracy - check.merged_accuracy > MAX_ACCURACY_GAP:
        gap = (check.trained_accuracy - check.merged_accuracy) * 100
        hint = "; --merge_into dequantized merges into the weights it trained on" if four_bit and not quantized else ""
        print(
            f"note: the merged model scores {gap:.1f} points below the run as trained: the adapter leans on the "
            f"base it trained on{hint}"
        )
    data = f" DATA={record['data']}" if record["data"] else ""
    print(f"make eval MODEL={out} TASK={task}{data} LIMIT={len(rows)}   # the merged model's accuracy again")

    # ----- optional: the hub -----
    if args.push_to_hub:
        from huggingface_hub import HfApi

        api = HfApi()
        api.create_repo(args.hub_model_id, exist_ok=True, private=True)
        api.upload_folder(repo_id=args.hub_model_id, folder_path=str(out))
        print(f"pushed {out} to https://huggingface.co/{args.hub_model_id} (private)")
    return record


if __name__ == "__main__":
    parser = TrlParser((ExportArguments,))
    main(*parse_config(parser))
