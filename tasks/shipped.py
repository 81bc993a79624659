"""The built tiny worlds, shipped in the repository with their hashes, installed where the recipes look for them.

Usage:
    make tiny                                              # both worlds, under artifacts/, in seconds
    python -m tasks.shipped --world tiny --out artifacts/tiny
    python -m tasks.shipped --check artifacts/rebuilt/tiny --world tiny   # does a rebuilt world equal the shipped?

A world built from the same seeds on another CPU is another world (PyTorch's and bitsandbytes' kernels take other
paths), so every machine starts from these files: `tasks/worlds/<world>/` holds the tokenizer and SFT'd model, the
data splits and world.json (settings, held-out accuracy and the machine it was built on); `tasks/worlds/manifest.json`
holds each file's SHA-256. Installing copies what differs and checks every hash, so a damaged checkout (a line-ending
conversion, a partial download) stops here, in one line, not as a base model that scores differently.
"""

import argparse
import fcntl
import hashlib
import json
import shutil
import sys
from collections.abc import Callable
from pathlib import Path

SHIPPED = Path(__file__).resolve().parent / "worlds"
MANIFEST = SHIPPED / "manifest.json"
WORLDS = ("tiny", "tiny-code", "tiny-length")
# What a world is: the files the recipes, eval and tests read. The SFT's own output folder (sft/) is not.
PARTS = ("model", "data", "world.json")


class WorldError(ValueError):
    """A shipped or installed world that is not what its manifest says."""


def sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def world_files(folder: Path) -> dict[str, str]:
    """{relative path: sha256} of a world folder's parts (model/, data/, world.json)."""
    files = {}
    for part in PARTS:
        path = folder / part
        paths = sorted(p for p in path.rglob("*") if p.is_file()) if path.is_dir() else [path] * path.is_file()
        files |= {p.relative_to(folder).as_posix(): sha256(p) for p in paths}
    return files


def manifest(world: str, source: Path = SHIPPED) -> dict[str, str]:
    path = source / MANIFEST.name
    try:
        entries = json.loads(path.read_text())
    except (OSError, ValueError) as err:
        raise WorldError(f"{path}: cannot read the shipped worlds' manifest ({err})") from None
    if world not in entries:
        raise WorldError(f"{path}: no world {world!r} (shipped: {', '.join(sorted(entries))})")
    return entries[world]["files"]


def differences(expected: dict[str, str], found: dict[str, str]) -> list[str]:
    """What differs between two {path: sha256} maps, one phrase per file."""
    missing = [f"{p} missing" for p in expected if p not in found]
    extra = [f"{p} not in the manifest" for p in found if p not in expected]
    changed = [f"{p} differs" for p in expected if p in found and found[p] != expected[p]]
    return missing + changed + extra


def verify_shipped(world: str, source: Path = SHIPPED, built: tuple[str, ...] = ()) -> dict[str, str]:
    """The manifest of a shipped world, after checking that the files in tasks/worlds/ match it (all but those under
    the `built` prefixes: made on each machine, hashed but not shipped)."""
    expected = manifest(world, source)
    shipped = {p: d for p, d in expected.items() if not p.startswith(built)}
    wrong = differences(shipped, world_files(source / world))
    if wrong:
        raise WorldError(
            f"{source / world}: the shipped world does not match {MANIFEST.name} ({'; '.join(wrong[:3])}): the "
            "checkout is damaged (line-ending conversion? partial clone?); `git checkout -- tasks/worlds` restores it"
        )
    return expected


def install(world: str, out: str | Path, source: Path = SHIPPED) -> str:
    """Installs a shipped world at `out` (copying only files that differ) and checks it; returns what it did."""
    changed, note = install_files(world, out, source)
    if not changed:
        return f"the {world} world at {out}: as shipped (hashes checked)"
    files = f"{len(changed)} file{'s' * (len(changed) != 1)}"
    return f"the {world} world at {out}: installed {files} from {source / world} (hashes checked){note}"


# Makes one part of a world at the given path (the folder a prefix names), for parts each machine builds itself.
Builder = Callable[[Path], None]


def install_files(
    world: str, out: str | Path, source: Path = SHIPPED, built: dict[str, Builder] | None = None
) -> tuple[list[str], str]:
    """Installs a world at `out`: the shipped files that differ are copied, a part under a `built` prefix
    ("model/") is made by its builder when any of its files differs, and every file is checked against the
    manifest. Returns the files that changed and a note of what else it did ("" or "; pairs ... moved to ...")."""
    out, built = Path(out), built or {}
    expected = verify_shipped(world, source, tuple(built))
    out.parent.mkdir(parents=True, exist_ok=True)
    # Two installs of one folder at once (two make targets, parallel test workers) take turns: the second finds the
    # files in place instead of removing the first's half-copied ones.
    with open(out.parent / f".{out.name}.install.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        return _install(world, out, source, expected, built)


def _install(
    world: str, out: Path, source: Path, expected: dict[str, str], built: dict[str, Builder]
) -> tuple[list[str], str]:
    before = world_files(out) if out.exists() else {}
    changed = [p for p, digest in expected.items() if before.get(p) != digest]
    model_changed = any(p.startswith("model/") for p in changed) and any(p.startswith("model/") for p in before)
    for part in PARTS:  # files of another world (a local build with other names) would otherwise linger
        target = out / part
        if target.is_dir():
            for path in target.rglob("*"):
                if path.is_file() and path.relative_to(out).as_posix() not in expected:
                    path.unlink()
    for relative in changed:
        if relative.startswith(tuple(built)):
            continue
        target = out / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        partial = target.with_name(target.name + ".partial")
        shutil.copyfile(source / world / relative, partial)
        partial.replace(target)  # an interrupted install leaves no half-written weights under the real name
    for prefix, build in built.items():
        if any(p.startswith(prefix) for p in changed):
            build(out / prefix.rstrip("/"))
    wrong = differences(expected, world_files(out))
    if wrong:
        hint = ""
        if any(p.startswith(prefix) for p in wrong for prefix in built):
            hint = " (built here: other versions of the libraries that build it than requirements*.txt pin?)"
        raise WorldError(f"{out}: after installing the {world} world: {'; '.join(wrong[:3])}{hint}")
    (out / "world.json").touch()  # newer than the manifest: make installs again only when a pull changes it
    note = ""
    if model_changed and (out / "pairs").exists():
        # Pairs sampled from the model this replaced are another model's samples: kept, out of the recipes' way.
        stale = out / "pairs.from-replaced-model"
        shutil.rmtree(stale, ignore_errors=True)
        (out / "pairs").rename(stale)
        note = f"; pairs sampled from the replaced model moved to {stale}"
    return changed, note


def ship(folder: str | Path, world: str) -> str:
    """Makes a world built here the shipped one (a maintainer's step, followed by rerunning what publishes numbers):
    copies its parts into tasks/worlds/<world>/ and records their hashes in the manifest."""
    folder, target = Path(folder), SHIPPED / world
    if not (folder / "world.json").is_file():
        raise WorldError(f"{folder}: no world.json here; build a world first (make tiny-rebuild)")
    shutil.rmtree(target, ignore_errors=True)
    for part in PARTS:
        source = folder / part
        if source.is_dir():
            shutil.copytree(source, target / part)
        else:
            target.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(source, target / part)
    entries = json.loads(MANIFEST.read_text()) if MANIFEST.is_file() else {}
    entries[world] = {"files": world_files(target)}
    MANIFEST.write_text(json.dumps(dict(sorted(entries.items())), indent=2) + "\n")
    return f"shipped {folder} as the {world} world: {len(entries[world]['files'])} files in {target}"


def compare(folder: str | Path, world: str) -> dict:
    """How a world built here compares with the shipped one: which files are equal, and the two accuracies."""
    folder = Path(folder)
    expected = verify_shipped(world)
    found = world_files(folder)
    groups = {"data": "data/", "tokenizer": "model/tokenizer", "model weights": "model/model"}
    same = {
        name: all(found.get(p) == d for p, d in expected.items() if p.startswith(prefix)) and bool(found)
        for name, prefix in groups.items()
    }
    shipped = json.loads((SHIPPED / world / "world.json").read_text())
    built = json.loads((folder / "world.json").read_text())
    return {
        "same": same,
        "held_out_accuracy": {"built": built["held_out_accuracy"], "shipped": shipped["held_out_accuracy"]},
        "shipped_built_on": shipped.get("built_on", {}),
    }


def describe_comparison(result: dict, world: str) -> str:
    same, accuracy = result["same"], result["held_out_accuracy"]
    parts = [f"{name} {'identical to' if equal else 'differ from'} the shipped" for name, equal in same.items()]
    built_on = result["shipped_built_on"]
    where = ", ".join([built_on.get("cpu", "another machine"), *built_on.get("kernel_flags", [])])
    return (
        f"{world}: {', '.join(parts)}; held-out greedy accuracy {accuracy['built']:.1%} here, "
        f"{accuracy['shipped']:.1%} shipped (built on {where})"
    )


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--world", choices=WORLDS, default="tiny")
    parser.add_argument("--out", help="where to install it (artifacts/<world>)")
    parser.add_argument("--check", metavar="FOLDER", help="compare a world built here with the shipped one")
    parser.add_argument("--ship", metavar="FOLDER", help="make a world built here the shipped one (maintainers)")
    args = parser.parse_args()
    try:
        if args.ship:
            print(ship(args.ship, args.world))
        elif args.check:
            print(describe_comparison(compare(args.check, args.world), args.world))
        else:
            print(install(args.world, args.out or f"artifacts/{args.world}"))
    except (WorldError, OSError) as err:
        sys.exit(f"error: {err}")


if __name__ == "__main__":
    main()
