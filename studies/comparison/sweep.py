"""`make sweep`: every method tuned the same way, on the validation split (never the held-out test). First its learning
rate over a grid, every point at `seeds` seeds (each seed its own pairs for DPO, IPO and ORPO, as in the comparison);
a grid whose best point is at an edge is extended one step past that edge, at most `extend` times, and a best point
still at an edge is recorded as such. Then, at the chosen rate, each method's own key at `key_points` points around
its config's value, extended the same way (DPO, IPO and ORPO beta; PPO kl_coef and the critic's own learning rate;
GRPO's beta has its own study); a key's point at the value the chosen rate already trained with is that same run, not
a second one. A resumed sweep goes on from the key's points its file holds at the chosen rate, and may extend that
grid `extend` times more. The best mean over seeds is chosen. Writes sweep.json (one row per method, key and value:
every seed's number, the mean with its bounded interval, the commit and CPU it ran on) after every point, so a sweep
spread over sessions resumes from its committed file (`resume`: a point measured before with the same seeds, prompts
and validation is kept), and sweep.png at the end."""

import json
import math
from pathlib import Path

from core.evaluation.benchmarks import TASKS, load_task_data
from core.inputs.data import pairs_cost
from core.report.stats import share_over_seeds
from core.runs.provenance import commit, cpu
from studies.comparison.tuning import plot_sweep
from studies.runner import (
    METHODS,
    PREFERENCE_METHODS,
    PROFILES,
    SWEEP_GRID,
    precision_flags,
    recipe_config,
    sample_pairs,
    train_all,
)
from studies.scoring import evaluate

# Each method's own key, swept at its chosen learning rate; PPO's critic rate is centred on the policy's.
KEYS = {"ppo": ("kl_coef", "value_learning_rate"), "dpo": ("beta",), "ipo": ("beta",), "orpo": ("beta",)}
# An equal tuning budget (`--equal_budget`): one key each, GRPO's included. GRPO's is beta, its KL coefficient: the
# knob that trades reward for staying near the start, as PPO's kl_coef and the preference methods' beta do (its clip
# range does nothing at one update a batch, and k changes the compute the table holds equal).
EQUAL_KEYS = {"grpo": ("beta",), "ppo": ("kl_coef",), "dpo": ("beta",), "ipo": ("beta",), "orpo": ("beta",)}
KEY_STEP = 3.0  # a key's points: its config's value times KEY_STEP ** -1, 0, 1
FROM_ZERO = 0.01  # a key whose config value is 0 (GRPO's beta): 0, then FROM_ZERO, KEY_STEP apart


def key_grid(centre: float, points: int) -> list[float]:
    """`points` values around `centre`, KEY_STEP apart; from a centre of 0, the 0 itself and points above it.

    >>> key_grid(0.1, 3), key_grid(0.0, 3)
    ([0.0333, 0.1, 0.3], [0.0, 0.01, 0.03])
    """
    if centre == 0:
        return [0.0] + [float(f"{FROM_ZERO * KEY_STEP**i:.3g}") for i in range(points - 1)]
    half = points // 2
    return [float(f"{centre * KEY_STEP**i:.3g}") for i in range(-half, points - half)]


def table_seeds(first: int | None, count: int, sweeps: list[Path]) -> list[int]:
    """A table's `count` seeds: from `first`, or from the first seed after every seed the `sweeps` (sweep.json files
    that tuned it) trained on, 0 without one; one line, and nothing run, where they would overlap: a table's seeds
    never also tune it.

    >>> import tempfile
    >>> sweep = Path(tempfile.mkdtemp()) / "sweep.json"
    >>> table_seeds(None, 3, [sweep])  # no sweep yet
    [0, 1, 2]
    >>> _ = sweep.write_text('[{"method": "grpo", "seeds": [0, 1]}]')
    >>> table_seeds(None, 3, [sweep])
    [2, 3, 4]
    >>> table_seeds(1, 3, [sweep])
    Traceback (most recent call last):
    SystemExit: --first_seed 1: seed 1 also tuned this table (sweep.json); its seeds never tune it: --first_seed 2
    """
    tuned: set[int] = set()
    for path in sweeps:
        if path.is_file():
            tuned |= {seed for row in json.loads(path.read_text()) for seed in row.get("seeds", [])}
    after = max(tuned) + 1 if tuned else 0
    seeds = list(range(after if first is None else first, (after if first is None else first) + count))
    overlap = sorted(tuned & set(seeds))
    if overlap:
        said = ", ".join(map(str, overlap))
        raise SystemExit(
            f"--first_seed {seeds[0]}: seed{'s' if len(overlap) > 1 else ''} {said} also tuned this table "
            f"({', '.join(p.name for p in sweeps if p.is_file())}); its seeds never tune it: --first_seed {after}"
        )
    return seeds


def chosen_settings(path: Path, methods) -> dict:
    """method -> {"learning_rate": ..., <key>: ...}: what the sweep in `path` chose for each of `methods` (its chosen
    row of each key); one line naming the method where the sweep has no chosen learning rate for it.

    >>> import tempfile
    >>> path = Path(tempfile.mkdtemp()) / "sweep.json"
    >>> rows = [{"method": "dpo", "key": "learning_rate", "value": 1e-4, "chosen": True},
    ...         {"method": "dpo", "key": "learning_rate", "value": 5e-4, "chosen": False},
    ...         {"method": "dpo", "key": "beta", "value": 0.3, "chosen": True}]
    >>> _ = path.write_text(json.dumps(rows))
    >>> chosen_settings(path, ["dpo"])
    {'dpo': {'learning_rate': 0.0001, 'beta': 0.3}}
    """
    if not path.is_file():
        raise SystemExit(f'--tuned: no {path}; make sweep ARGS="--equal_budget --out {path.parent}" writes it')
    rows = json.loads(path.read_text())
    chosen = {}
    for method in methods:
        own = {
            r.get("key", "learning_rate"): r.get("value", r.get("learning_rate"))
            for r in rows
            if r["method"] == method and r["chosen"]
        }
        if "learning_rate" not in own:
            raise SystemExit(f"--tuned: {path} chose no learning rate for {method}")
        chosen[method] = {"learning_rate": own.pop("learning_rate"), **own}
    return chosen


def equal_budget(grid: dict, key_points: int) -> int:
    """The configurations each method trains under `--equal_budget`: its learning-rate grid, then its one key's points
    but the one its chosen rate already trained (no grid grows past an edge).

    >>> equal_budget({"grpo": [1e-4, 5e-4, 1e-3], "dpo": [5e-5, 1e-4, 5e-4]}, 3)
    5
    """
    sizes = {len(values) for values in grid.values()}
    if len(sizes) != 1:
        raise SystemExit(f"--equal_budget: every method's learning-rate grid must have as many points ({grid})")
    return sizes.pop() + key_points - 1


def sweep_plan(
    profile: str,
    methods,
    learning_rates: list[float] | None = None,
    seeds: int | None = None,
    extend: int | None = None,
    key_points: int | None = None,
) -> tuple[dict, dict]:
    """(method -> learning-rate grid, the sweep's seeds, extend and key_points): what is given, else the profile's own
    sweep (PROFILES' `sweep`; the real model: its configs' former rates x 1/3, 1, 3 at one seed, no extension, no
    keys), else SWEEP_GRID at 2 seeds, extended at most twice, each key at 3 points.

    >>> grid, plan = sweep_plan("smol", ["grpo", "dpo"])
    >>> grid
    {'grpo': [6.67e-05, 0.0002, 0.0006], 'dpo': [1.67e-05, 5e-05, 0.00015]}
    >>> plan
    {'seeds': 1, 'extend': 0, 'key_points': 0}
    >>> sweep_plan("tiny", ["ppo"], seeds=3)
    ({'ppo': [0.0002, 0.0005, 0.001]}, {'seeds': 3, 'extend': 2, 'key_points': 3})
    """
    own = PROFILES[profile].get("sweep")
    defaults = own or {"seeds": 2, "extend": 2, "key_points": 3}
    if learning_rates:
        grid = {m: sorted(learning_rates) for m in methods}
    elif own:
        grid = {m: key_grid(own["centres"][m], 3) for m in methods}
    else:
        grid = {m: SWEEP_GRID[m] for m in methods}
    given = {"seeds": seeds, "extend": extend, "key_points": key_points}
    return grid, {name: defaults[name] if value is None else value for name, value in given.items()}


def past_the_edge(values: list[float], best: float) -> float | None:
    """The next grid point past `best` when it is at an edge of `values` (sorted), one grid step further on a log
    scale; None when `best` is inside.

    >>> past_the_edge([5e-5, 1e-4, 5e-4], 5e-5), past_the_edge([5e-5, 1e-4, 5e-4], 1e-4)
    (2.5e-05, None)
    >>> past_the_edge([2e-4, 5e-4, 1e-3], 1e-3)
    0.002
    >>> past_the_edge([0.0, 0.01, 0.03], 0.0) is None  # nothing lies below a coefficient of 0
    True
    """
    if best == values[0] == 0:
        return None
    if best == values[0]:
        return float(f"{values[0] * values[0] / values[1]:.3g}")
    if best == values[-1]:
        return float(f"{values[-1] * values[-1] / values[-2]:.3g}")
    return None


def tune(measure, values: list[float], rounds: int, done: dict | None = None) -> list[dict]:
    """`measure(value)` (a sweep.json row) at each of `values`; while the best is at an edge, one more point past it,
    at most `rounds` times. The best row is `chosen`, and `at_edge` where it still is at one. `done` (value -> row,
    filled in as points finish) may hold points measured before."""
    done = {} if done is None else done
    values = sorted(values)
    for round_ in range(rounds + 1):
        for value in values:
            if value not in done:
                done[value] = measure(value)
        best = max(done.values(), key=lambda r: r["validation_sampled_pass1"])["value"]
        further = past_the_edge(values, best)
        if further is None or round_ == rounds:
            break
        values = sorted([*values, further])
    best = max(done.values(), key=lambda r: r["validation_sampled_pass1"])
    at_edge = past_the_edge(values, best["value"]) is not None
    for row in done.values():
        row["chosen"], row["at_edge"] = row is best, row is best and at_edge
    if at_edge:
        print(f"[sweep] {best['method']} {best['key']}: the best point {best['value']:g} is still at the grid's edge")
    return [done[value] for value in sorted(done)]


def held_grid(
    earlier: list[dict], method: str, key: str, rate: float, settings: dict, machine: dict | None = None
) -> list[float]:
    """The values of `key` an earlier sweep.json measured for `method` at the learning rate `rate`, the way this
    sweep would (a resumed sweep goes on from them: once the config has taken the chosen value, that value is no
    longer the grid's centre, and the rate's runs trained with the config's value of then).

    >>> settings = {"seeds": [0, 1], "prompts": 320}
    >>> row = {"method": "dpo", "key": "beta", "learning_rate": 1e-4, **settings}
    >>> rows = [row | {"value": 0.3}, row | {"value": 0.1}, row | {"value": 0.9, "seeds": [0]}]
    >>> held_grid(rows, "dpo", "beta", 1e-4, settings), held_grid(rows, "dpo", "beta", 5e-4, settings)
    ([0.1, 0.3], [])
    """
    return sorted(
        r["value"]
        for r in earlier
        if r.get("key") == key and same_point(r, method, key, r["value"], rate, settings, machine)
    )


def aggregated(method: str, key: str, value: float, rate: float, runs: list[dict], trials: int) -> dict:
    """One row of sweep.json: a point's seeds and their mean with a 95% interval bounded to [0, 1]."""
    spread = share_over_seeds([r["validation_sampled_pass1"] for r in runs], trials)
    return {
        "method": method,
        "key": key,
        "value": value,
        "learning_rate": rate,
        "seeds": [r["seed"] for r in runs],
        "per_seed": [r["validation_sampled_pass1"] for r in runs],
        "validation_sampled_pass1": spread["mean"],
        "ci95": spread["ci95"] or runs[0]["ci95"],
        "validation_n": runs[0]["validation_n"],
        "k": runs[0]["k"],
        "measured": runs[0]["measured"],
    }


def same_point(
    row: dict, method: str, key: str, value: float, rate: float, settings: dict, machine: dict | None = None
) -> bool:
    """Whether an earlier sweep.json row measured this point the way this sweep would: with `machine` (`cpu()`), on
    the same CPU class too, since the tiny worlds train differently on each (a sweep resumed on another class measures
    its points again rather than mix classes in one choice).

    >>> row = {"method": "dpo", "key": "beta", "value": 0.1, "learning_rate": 1e-4, "seeds": [0, 1]}
    >>> row["measured"] = {"commit": "abc", "cpu": "AMD EPYC", "kernel_flags": ["avx2"]}
    >>> avx2, avx512 = {"cpu": "AMD EPYC", "kernel_flags": ["avx2"]}, {"cpu": "AMD EPYC", "kernel_flags": ["avx512f"]}
    >>> [same_point(row, "dpo", "beta", 0.1, 1e-4, {"seeds": [0, 1]}, where) for where in (avx2, avx512)]
    [True, False]
    """
    where = (row["method"], row.get("key"), row.get("value"), row.get("learning_rate"))
    same_class = machine is None or all(
        row.get("measured", {}).get(name) == machine[name] for name in ("cpu", "kernel_flags")
    )
    return (
        where == (method, key, value, rate) and same_class and all(row.get(name) == v for name, v in settings.items())
    )


def measured_run(
    profile: str,
    prompts: int,
    run_folder: Path,
    method: str,
    seed: int,
    rate: float,
    flags: tuple,
    pairs_file: Path | None,
    validation: tuple,
    measured: dict,
) -> dict:
    """One sweep run: `method` trained with `seed` at learning rate `rate` and `flags` in `run_folder`, then its
    validation sampled pass@1 (`validation`: the GRPO config, task, rows, k and precision), where it was measured."""
    config, task, rows, k, load_in_4bit = validation
    run_folder.mkdir(parents=True, exist_ok=True)
    trained = train_all(
        profile, prompts, run_folder, [method], seed, {method: rate}, checkpoints=0, flags=flags, pairs_file=pairs_file
    )
    metrics, _ = evaluate(
        config["model_name_or_path"],
        trained[(method, seed)],
        task,
        rows,
        k,
        config["temperature"],
        greedy=False,
        load_in_4bit=load_in_4bit,
        sample_seed=seed,
    )
    return {
        "seed": seed,
        "validation_sampled_pass1": metrics["sampled"],
        "ci95": metrics["sampled_ci95"],
        "validation_n": len(rows),
        "k": k,
        "measured": measured,
    }


def write_progress(path: Path, kept: list, results: list, progress: list, earlier: list, methods) -> None:
    """sweep.json as far as the sweep got: the other methods' rows (`kept`), the finished methods' (`results`), the
    points measured since (not chosen yet), and, from a resumed sweep's `earlier` file, the points it has not reached
    yet (they stay until it does)."""
    finished = {id(r) for r in results}
    unfinished = [{**r, "chosen": False, "at_edge": False} for r in progress if id(r) not in finished]
    reached = {(r["method"], r.get("key"), r.get("value")) for r in results + progress}
    ahead = [
        r for r in earlier if r["method"] in methods and (r["method"], r.get("key"), r.get("value")) not in reached
    ]
    path.write_text(json.dumps(in_order(kept + results + unfinished + ahead), indent=2) + "\n")


def fresh_key_grid(chosen: dict, key: str, method_config: dict, key_points: int) -> tuple[list[float], dict]:
    """(a key's grid around its config's value, the point already measured): the point at the value the chosen
    rate trained with is the chosen rate's own run (its critic's rate: centred on the chosen rate itself)."""
    centre = chosen["value"] if key == "value_learning_rate" else method_config.get(key, 0.0)
    grid = key_grid(centre, key_points)
    same = next((v for v in grid if math.isclose(v, centre)), None)
    shared = {**chosen, "key": key, "value": same, "same_run_as": "learning_rate"}
    return grid, ({same: shared} if same is not None else {})


def sweep(
    profile: str,
    prompts: int,
    out: Path,
    methods,
    grid: dict,
    validation: str,
    k: int,
    limit: int | None,
    load_in_4bit: bool = True,
    seeds: int = 2,
    extend: int = 2,
    key_points: int = 3,
    resume: bool = False,
    keys: dict = KEYS,
) -> list[dict]:
    """Each method's learning rate, then its keys (`keys`: KEYS, or EQUAL_KEYS for an equal budget), as the module
    says; returns sweep.json's rows (an earlier sweep's rows of the other methods kept; with `resume`, its points
    measured the same way too)."""
    config = recipe_config(profile, "grpo")[1]
    task = PROFILES[profile]["task"]
    rows = load_task_data(TASKS[task], validation, limit)
    machine = cpu()
    measured = {"commit": commit(), **machine}  # rows of several sweeps can sit in one file: each says where it ran
    flags = precision_flags(load_in_4bit)
    folder = out / "sweep"
    folder.mkdir(parents=True, exist_ok=True)
    path = out / "sweep.json"
    earlier = json.loads(path.read_text()) if path.is_file() else []
    # A sweep of some methods keeps the earlier rows of the others (`make sweep ARGS="--methods ipo"`).
    kept = [r for r in earlier if r["method"] not in methods]
    settings = {"seeds": list(range(seeds)), "prompts": prompts, "validation_n": len(rows), "k": k}
    pairs = {}

    def pairs_of(seed: int) -> Path:
        """One set of pairs per seed for every point, so the points are compared on the same data; sampled when a
        point first needs them (a resumed sweep keeps the ones it sampled before)."""
        if seed not in pairs:
            kept_pairs = folder / f"pairs-seed{seed}.jsonl"
            cost = pairs_cost(kept_pairs)
            if resume and cost.is_file() and json.loads(cost.read_text())["prompts"] == prompts:
                pairs[seed] = kept_pairs
            else:
                pairs[seed] = sample_pairs(profile, prompts, folder, seed, flags=flags)
        return pairs[seed]

    def point(method: str, key: str, value: float, rate: float) -> dict:
        before = [r for r in earlier if same_point(r, method, key, value, rate, settings, machine)] if resume else []
        if before:
            print(f"[sweep] {method} {key} {value:g}: measured before, kept", flush=True)
            progress.append({name: v for name, v in before[0].items() if name not in ("chosen", "at_edge")})
            return progress[-1]
        extra = () if key == "learning_rate" else (f"--{key}", str(value))
        runs = [
            measured_run(
                profile,
                prompts,
                folder / f"{method}-{key}-{value:g}",
                method,
                seed,
                rate,
                (*flags, *extra),
                pairs_of(seed) if method in PREFERENCE_METHODS else None,
                (config, task, rows, k, load_in_4bit),
                measured,
            )
            for seed in range(seeds)
        ]
        progress.append({**aggregated(method, key, value, rate, runs, len(rows) * k), "prompts": prompts})
        row = progress[-1]
        save()
        print(
            f"[sweep] {method} {key} {value:g}: validation sampled pass@1 {row['validation_sampled_pass1']:.3f} "
            f"(seeds {', '.join(f'{v:.3f}' for v in row['per_seed'])})",
            flush=True,
        )
        return row

    results, progress = [], []  # the finished methods' rows; every point measured so far

    def save() -> None:
        write_progress(path, kept, results, progress, earlier if resume else [], methods)

    for method in methods:
        own = tune(lambda value, m=method: point(m, "learning_rate", value, value), grid[method], extend)
        results += own
        chosen = next(r for r in own if r["chosen"])
        method_config = recipe_config(profile, method)[1]
        for key in keys.get(method, ()) if key_points else ():
            held = held_grid(earlier, method, key, chosen["value"], settings, machine) if resume else []
            grid_, done = (held, {}) if held else fresh_key_grid(chosen, key, method_config, key_points)
            results += tune(lambda v, m=method, k=key, r=chosen["value"]: point(m, k, v, r), grid_, extend, done)
        save()

    results = in_order(kept + results)
    path.write_text(json.dumps(results, indent=2) + "\n")
    plot_sweep(results, out / "sweep.png")
    return results


def in_order(rows: list[dict]) -> list[dict]:
    return sorted(
        rows,
        key=lambda r: (
            METHODS.index(r["method"]),
            r.get("key", "learning_rate") != "learning_rate",
            r.get("key", "learning_rate"),
            r.get("value", r["learning_rate"]),
        ),
    )
