"""The exported model's card (README.md, with the hub's metadata header): what it is, how it was made, what it scored
and how to load it, from the run's own records."""

import json

from core.inputs.prompts import prompt_messages
from core.report.finished import trained_precision


def heldout_line(summary: dict) -> str:
    """The run's held-out result as its summary printed it, or that it has none."""
    held = (summary.get("verdict") or {}).get("heldout")
    if not held or held.get("before") is None:
        return "not measured during training (`make audit RUN=<run>` measures it)"
    task = (held.get("settings") or {}).get("task") or "held-out"
    paired = held.get("paired") or {}
    interval = ""
    if paired.get("ci95"):
        low, high = paired["ci95"]
        interval = f" ({paired['mean']:+.1%} [{low:+.1%}, {high:+.1%}], paired 95%)"
    return f"{task}, {held['n']} problems, greedy: {held['before']:.1%} -> {held['after']:.1%}{interval}"


def model_card(run: str, summary: dict, config: dict, versions: dict, check: dict, export: dict) -> str:
    method = summary["method"]
    base = config["model_name_or_path"]
    data = config.get("dataset_name") or config.get("train_data") or "see the run's config.yaml"
    system = config.get("system_prompt")
    messages = prompt_messages("...", system)
    trained_in = trained_precision(config) + (" (QLoRA)" if config.get("load_in_4bit") else "")
    lora = f"LoRA r={config.get('lora_r')}, alpha={config.get('lora_alpha')}, on {config.get('lora_target_modules')}"
    header = "\n".join(
        [
            "---",
            f"base_model: {json.dumps(base)}" if "/" in base and not base.startswith((".", "/")) else "",
            "library_name: transformers",
            "tags: [trl, " + method + ", lora-merged]",
            "---",
        ]
    ).replace("\n\n", "\n")
    return f"""{header}
# {method.upper()} on {base}, merged

The base model `{base}` with the LoRA adapter of the run `{run}` merged into its weights, saved in
{export["precision"]}: an ordinary model folder (safetensors, tokenizer, chat template, generation config).

| | |
|---|---|
| method | {method} ({summary["steps"]} steps) |
| trained | {lora}; base loaded in {trained_in} |
| data | {data} |
| held-out during training | {heldout_line(summary)} |
| export check | {check["line"]} |
| commit | run: {versions.get("commit") or "unknown"}; export: {export.get("commit") or "unknown"} |
| machine | run: {versions.get("cpu", "unknown")}; export: {export.get("cpu", "unknown")} |

## Use

```python
from transformers import AutoModelForCausalLM, AutoTokenizer

model = AutoModelForCausalLM.from_pretrained("<this folder>")
tokenizer = AutoTokenizer.from_pretrained("<this folder>")
messages = {json.dumps(messages)}
inputs = tokenizer.apply_chat_template(messages, add_generation_prompt=True, return_tensors="pt", return_dict=True)
print(tokenizer.decode(model.generate(**inputs, max_new_tokens=256)[0], skip_special_tokens=True))
```

Prompt it as it was trained: {"the system prompt above, then the question" if system else "the question alone"}.
`export.json` beside this card holds the check's numbers; the run's `summary.json` and `config.yaml` its training.
"""
