"""The house keeps its shape: dependencies point down the layers, no import cycle (imports inside functions
included), modules stay small, and the README's tree is the code's."""

import ast
import re
from pathlib import Path

from tests.conftest import REPO_ROOT

# Each package may import from lower layers and from itself, never from its own layer or above (docs/architecture.md).
LAYERS = {"rewards": 0, "tasks": 0, "core": 1, "recipes": 2, "eval": 2, "studies": 3}
# core's rooms, lowest first: a room imports from the rooms below it and from itself, never from one above; the
# modules at core's top (errors, library_noise) sit under every room and import no room.
CORE_ROOMS = ["runs", "inputs", "logprobs", "training", "trl_internals", "evaluation", "report", "export"]
MAX_MODULE_LINES = 450
README = (REPO_ROOT / "README.md").read_text()


def module_name(path: Path) -> str:
    parts = list(path.relative_to(REPO_ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def project_modules() -> dict[str, Path]:
    return {module_name(p): p for package in LAYERS for p in sorted((REPO_ROOT / package).rglob("*.py"))}


def imported_modules(path: Path, package: str, modules: dict[str, Path]) -> set[str]:
    """Every project module `path` imports, anywhere in the file (module level, functions, methods)."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:  # relative: resolved against the importing module's package
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(anchor + ([base] if base else []))
            # `from pkg import mod` imports the submodule pkg.mod when there is one, else a name from pkg
            names = [f"{base}.{alias.name}" if f"{base}.{alias.name}" in modules else base for alias in node.names]
        else:
            continue
        for name in names:
            while name and name not in modules:  # `import a.b.c` of a module a.b with attribute c
                name = name.rpartition(".")[0]
            if name:
                found.add(name)
    return found


def import_graph() -> dict[str, set[str]]:
    modules = project_modules()
    graph = {}
    for name, path in modules.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        graph[name] = imported_modules(path, package, modules) - {name}
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan)."""
    index, low, stack, on_stack, found = {}, {}, [], set(), []

    def visit(node):
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in graph.get(node, ()):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def test_the_graph_sees_function_level_imports():
    graph = import_graph()
    # studies.bench_rewards imports math_verify's parse inside a function and the project's modules at the top;
    # core.report.plots imports matplotlib inside plot_runs: third-party imports are not edges, project ones anywhere
    # are.
    assert "core.errors" in graph["core.report.plots"] and "rewards.math" in graph["studies.bench_rewards"]
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_no_import_cycle():
    assert cycles(import_graph()) == []


def test_dependencies_point_down_the_layers():
    upward = [
        f"{module} -> {target}"
        for module, targets in import_graph().items()
        for target in targets
        if module.split(".")[0] != target.split(".")[0]
        and LAYERS[target.split(".")[0]] >= LAYERS[module.split(".")[0]]
    ]
    assert upward == []


def test_the_studies_subpackages_never_import_each_other_both_ways():
    """studies/comparison, grid and memory may lean on one another one way; what two of them share sits in the
    studies' own top modules (runner, processes, costs)."""
    edges = {
        (module.split(".")[1], target.split(".")[1])
        for module, targets in import_graph().items()
        for target in targets
        if module.count(".") >= 2
        and target.count(".") >= 2
        and module.startswith("studies.")
        and target.startswith("studies.")
        and module.split(".")[1] != target.split(".")[1]
    }
    assert sorted((a, b) for a, b in edges if (b, a) in edges) == []


def core_room(module: str) -> int:
    """A core module's room index; -1 for the modules at core's top."""
    parts = module.split(".")
    return CORE_ROOMS.index(parts[1]) if len(parts) > 2 else -1


def test_core_is_rooms_and_they_point_down():
    modules = [m for m in project_modules() if m.startswith("core.")]
    rooms = {m.split(".")[1] for m in modules if m.count(".") >= 1 and m.split(".")[1] in CORE_ROOMS}
    assert rooms == set(CORE_ROOMS)
    top = sorted(m for m in modules if m.count(".") == 1 and m.split(".")[1] not in CORE_ROOMS)
    assert top == ["core.errors", "core.library_noise"]  # everything else lives in a room
    upward = [
        f"{module} -> {target}"
        for module, targets in import_graph().items()
        if module.startswith("core.")
        for target in targets
        if target.startswith("core.")
        and target != "core"
        and core_room(target) >= 0
        and core_room(target) > core_room(module)
    ]
    assert upward == []


def test_modules_stay_small():
    long = {
        name: n
        for name, path in project_modules().items()
        if (n := len(path.read_text().splitlines())) > MAX_MODULE_LINES
    }
    assert long == {}


def tree_entries() -> list[tuple[str, str]]:
    """(folder, file or folder pattern) for each name in the README's annotated tree (```text block after
    '## Layout'): a line is `folder/  names separated by single spaces  description`."""
    block = re.search(r"## Layout.*?```text\n(.*?)```", README, re.DOTALL).group(1)
    entries, folder = [], ""
    for line in block.splitlines():
        columns = re.split(r" {2,}", line.rstrip())
        if line and not line.startswith(" "):
            folder, columns = columns[0], columns[1:]
        if columns and columns[0] == "":
            columns = columns[1:]
        if columns:
            entries += [(folder, name) for name in columns[0].split(" ")]
    return entries


def test_readme_tree_matches_the_code():
    entries = tree_entries()
    assert len(entries) > 40
    missing = [
        f"{folder}{name}"
        for folder, name in entries
        if not list(REPO_ROOT.glob(re.sub(r"<[^>]+>", "*", f"{folder}{name}").rstrip("/")))
    ]
    assert missing == []
    named = {f"{folder}{name}" for folder, name in entries}

    def is_named(path: Path) -> bool:  # by its own name, or by a folder of its own named in the tree
        relative = path.relative_to(REPO_ROOT)
        return str(relative) in named or any(f"{parent}/" in named for parent in relative.parents)

    unnamed = [
        str(path.relative_to(REPO_ROOT))
        for path in project_modules().values()
        if path.name != "__init__.py" and not path.name.startswith("_") and not is_named(path)
    ]
    assert unnamed == []


def test_readme_is_a_short_guide():
    assert len(README.splitlines()) <= 300
    for passage in ("before this change", "Before this change", "no longer", "used to"):
        assert passage not in README


def test_classes_are_declared_not_assembled_at_run_time():
    """Trainer classes (and every other) are ordinary class statements: no three-argument `type(name, bases, ns)`."""
    assembled = [
        f"{name}:{node.lineno}"
        for name, path in project_modules().items()
        for node in ast.walk(ast.parse(path.read_text()))
        if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "type" and len(node.args) == 3
    ]
    assert assembled == []


def test_the_licence_the_package_declares_is_the_file_it_ships():
    """Apache-2.0, as TRL: pyproject's SPDX expression names the LICENSE file the wheel carries, and that file is the
    licence's text with this project's copyright line."""
    import tomllib

    project = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text())["project"]
    assert project["license"] == "Apache-2.0" and project["license-files"] == ["LICENSE"]
    text = (REPO_ROOT / "LICENSE").read_text()
    assert text.split("\n", 1)[0].strip() == "Apache License" and "Version 2.0, January 2004" in text
    assert "END OF TERMS AND CONDITIONS" in text and "Copyright 2026 The rl-recipes authors" in text
