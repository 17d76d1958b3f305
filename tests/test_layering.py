"""The layering rules, checked on the source: gin only at the edge, the core free of plugin modules."""

import ast
from pathlib import Path

LIPGAN = Path(__file__).resolve().parents[1] / "lipgan"
#: The gin edge: the folders that may import gin (docs/layout.md).
GIN_EDGE = ("config", "cli")


def imported_modules(path: Path) -> set[str]:
    """Top-level names of every module ``path`` imports, at any depth (function-level included)."""
    names = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            names.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            names.add(node.module.split(".")[0])
    return names


def core_modules():
    return sorted(LIPGAN.rglob("*.py"))


def test_the_scan_sees_imports_inside_functions(tmp_path):
    sample = tmp_path / "m.py"
    sample.write_text("def f():\n    from gin import config\n    import lipgan_plugins.r1\n")
    assert {"gin", "lipgan_plugins"} <= imported_modules(sample)


def test_only_config_and_cli_import_gin():
    offenders = [
        str(p.relative_to(LIPGAN))
        for p in core_modules()
        if "gin" in imported_modules(p) and p.relative_to(LIPGAN).parts[0] not in GIN_EDGE
    ]
    assert offenders == []


def test_the_core_never_imports_the_builtin_plugins():
    offenders = [
        str(p.relative_to(LIPGAN))
        for p in core_modules()
        if "lipgan_plugins" in imported_modules(p)
    ]
    assert offenders == []


def test_no_module_outside_config_touches_gins_private_registry():
    offenders = [
        str(p.relative_to(LIPGAN))
        for p in core_modules()
        if "_REGISTRY" in p.read_text() and p.relative_to(LIPGAN) != Path("config/gin_binding.py")
    ]
    assert offenders == []


def test_every_module_has_a_place_in_the_documented_layers():
    """docs/layout.md names every folder of lipgan and every module of the folders it lists module
    by module."""
    layout = (LIPGAN.parent / "docs" / "layout.md").read_text()
    missing = [f"{p.name}/" for p in sorted(LIPGAN.iterdir()) if (p / "__init__.py").exists()] + [
        str(p.relative_to(LIPGAN)) for p in sorted(LIPGAN.glob("*.py")) if p.name != "__init__.py"
    ]
    missing = [m for m in missing if m not in layout]
    for folder in ("core", "run", "config", "cli"):
        section = layout[layout.index(f"\n{folder}/\n") :]
        missing += [
            f"{folder}/{p.name}"
            for p in sorted((LIPGAN / folder).glob("*.py"))
            if p.name != "__init__.py" and p.name not in section
        ]
    assert missing == []


def _runtime_nodes(tree: ast.AST, type_checking: bool = False):
    """Every node of ``tree`` except those under ``if TYPE_CHECKING:`` (never imported at run time)
    unless ``type_checking``."""
    if type_checking:
        yield from ast.walk(tree)
        return
    stack = [tree]
    while stack:
        node = stack.pop()
        yield node
        for child in ast.iter_child_nodes(node):
            if (
                isinstance(child, ast.If)
                and isinstance(child.test, ast.Name)
                and child.test.id == "TYPE_CHECKING"
            ):
                stack.extend(child.orelse)
                continue
            stack.append(child)


def module_graph(root: Path = LIPGAN, type_checking: bool = False) -> dict[str, set[str]]:
    """``{'lipgan.run.trainer': {'lipgan.run.loop', ...}}``: which lipgan modules each one imports,
    at any depth (function-level imports included; ``if TYPE_CHECKING:`` blocks left out unless
    ``type_checking``)."""
    modules = {}
    for path in root.rglob("*.py"):
        parts = list(path.relative_to(root.parent).with_suffix("").parts)
        modules[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path

    def resolve(name: str) -> str | None:
        while name and name not in modules:
            name = name.rpartition(".")[0]
        return name or None

    graph = {}
    for name, path in modules.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        targets = set()
        for node in _runtime_nodes(ast.parse(path.read_text(), str(path)), type_checking):
            if isinstance(node, ast.Import):
                targets.update(resolve(alias.name) for alias in node.names)
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:  # relative: from . import x, from .m import y
                    parent = package.split(".")[: len(package.split(".")) - node.level + 1]
                    base = ".".join(parent + ([node.module] if node.module else []))
                for alias in node.names:  # `from lipgan import run` imports the module lipgan.run
                    full = f"{base}.{alias.name}"
                    targets.add(full if full in modules else resolve(base))
        graph[name] = {t for t in targets if t and t != name and t.startswith("lipgan")}
    return graph


def import_cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan), each sorted."""
    index, low, stack, on_stack, cycles = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                cycles.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return cycles


def test_the_cycle_check_sees_function_level_imports(tmp_path):
    package = tmp_path / "lipgan"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "a.py").write_text("from lipgan.b import f\n")
    (package / "b.py").write_text("def f():\n    from lipgan import a\n")
    (package / "c.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from lipgan.a import f\n"
    )
    (package / "d.py").write_text("import lipgan.c\n")
    graph = module_graph(package)
    assert graph["lipgan.b"] == {"lipgan.a"} and graph["lipgan.c"] == set()
    assert import_cycles(graph) == [["lipgan.a", "lipgan.b"]]
    assert module_graph(package, type_checking=True)["lipgan.c"] == {"lipgan.a"}


def test_lipgan_has_no_import_cycle():
    """Modules import downwards only: trainer -> loop -> checkpoint -> rundir, never back (the
    host loop lived in run.py, which imported trainer.py, which imported it back inside fit;
    rundir imported trainer for flat_settings)."""
    assert import_cycles(module_graph()) == []


def test_type_checking_imports_make_no_circle_either():
    """Annotations are part of the layering: callbacks named the loop's TrainState under
    TYPE_CHECKING while the loop imported callbacks and progress (callbacks -> loop -> progress ->
    callbacks). TrainState lives in lipgan/core/train_state.py, below all three."""
    graph = module_graph(type_checking=True)
    assert import_cycles(graph) == []
    assert graph["lipgan.core.callbacks"] == {"lipgan.core.train_state"}
    assert graph["lipgan.core.train_state"] == set()


def test_the_training_loop_is_not_given_the_trainer():
    """The loop reads a narrow input state (lipgan/run/training_input.py), not the trainer."""
    graph = module_graph(type_checking=True)
    assert "lipgan.run.trainer" not in graph["lipgan.run.loop"]
    assert "lipgan.run.training_input" in graph["lipgan.run.loop"]
    assert "trainer" not in (LIPGAN / "run" / "loop.py").read_text().split('"""', 2)[2]


# -- the folders' layers (docs/layout.md) ----------------------------------------------------------
#: lipgan's folders (and top-level modules) from the bottom up: each may import its own layer's
#: modules within itself and any lower layer, never a folder of its own layer or above.
LAYERS = (
    ("core",),
    ("models", "data", "plots", "constraints.py", "strategies.py", "__init__.py"),
    ("metrics",),
    ("run", "bench"),
    ("study",),
    ("config",),
    ("testing", "reproduce"),
    ("cli",),
)
#: The longest chain of module imports allowed (issue 38: from 21 layers to at most 12).
MAX_CHAIN = 12
#: Known arrows that point up, each to be cut (and then deleted here: a listed arrow that is gone
#: fails the test). None today: the last one (the image study's reference rows reading their data
#: set's gin) was cut by computing those rows in the gin edge's child process (config/cells.py).
KNOWN_UPWARD: set[tuple[str, str]] = set()


def layered_graph() -> dict[str, set[str]]:
    """lipgan's import graph (TYPE_CHECKING included) without the :data:`KNOWN_UPWARD` arrows."""
    graph = module_graph(type_checking=True)
    for source, target in KNOWN_UPWARD:
        graph[source] = graph[source] - {target}
    return graph


def folder_of(module: str) -> str:
    """``lipgan.run.loop`` -> ``run``; ``lipgan.constraints`` -> ``constraints.py``."""
    parts = module.split(".")
    if len(parts) == 1:
        return "__init__.py"
    if len(parts) == 2 and not (LIPGAN / parts[1]).is_dir():
        return f"{parts[1]}.py"
    return parts[1]


def upward_imports(graph: dict[str, set[str]], layers=LAYERS) -> list[str]:
    """``a -> b`` for each import of a module in a folder of the same or a higher layer (and
    ``a: no layer`` for a folder the table does not place)."""
    layer = {name: i for i, names in enumerate(layers) for name in names}
    found = []
    for module, targets in sorted(graph.items()):
        here = folder_of(module)
        if here not in layer:
            found.append(f"{module}: no layer")
            continue
        for target in sorted(targets - {"lipgan"}):  # the package itself: every import runs it
            there = folder_of(target)
            if there != here and layer.get(there, len(layers)) >= layer[here]:
                found.append(f"{module} -> {target}")
    return found


def longest_chain(graph: dict[str, set[str]]) -> list[str]:
    """The longest path of imports (modules, top first) in an acyclic ``graph``."""
    best: dict[str, list[str]] = {}

    def chain(module):
        if module not in best:
            below = [chain(t) for t in sorted(graph.get(module, ())) if t in graph]
            best[module] = [module, *max(below, key=len, default=[])]
        return best[module]

    return max((chain(m) for m in sorted(graph)), key=len)


def test_the_layer_check_sees_an_upward_import_and_the_chain_its_length():
    graph = {
        "lipgan.core.errors": set(),
        "lipgan.core.engine": {"lipgan.core.errors"},
        "lipgan.run.loop": {"lipgan.core.engine"},
        "lipgan.run.trainer": {"lipgan.run.loop", "lipgan.bench.cases"},
        "lipgan.bench.cases": {"lipgan.core.engine"},
        "lipgan.models.mlp": {"lipgan.core.errors"},
    }
    assert upward_imports(graph) == ["lipgan.run.trainer -> lipgan.bench.cases"]
    assert longest_chain(graph) == [
        "lipgan.run.trainer",
        "lipgan.bench.cases",
        "lipgan.core.engine",
        "lipgan.core.errors",
    ]
    graph["lipgan.core.engine"].add("lipgan.models.mlp")
    assert "lipgan.core.engine -> lipgan.models.mlp" in upward_imports(graph)
    assert len(longest_chain(graph)) == 5
    assert upward_imports({"lipgan.newfolder.x": set()}) == ["lipgan.newfolder.x: no layer"]


def test_no_folder_imports_a_folder_of_its_own_or_a_higher_layer():
    """Function-level and TYPE_CHECKING imports count: they are arrows all the same."""
    assert upward_imports(layered_graph()) == []
    graph = module_graph(type_checking=True)
    assert [(s, t) for s, t in sorted(KNOWN_UPWARD) if t not in graph.get(s, ())] == []


def test_the_longest_import_chain_is_at_most_twelve_modules():
    chain = longest_chain(layered_graph())
    assert len(chain) <= MAX_CHAIN, " -> ".join(chain)


def test_no_cli_command_imports_another():
    """Each command module of lipgan/cli imports only the options they share; the group (main)
    names the commands by import string (``COMMANDS``) and imports none of them."""
    graph = module_graph(type_checking=True)
    shared = {"lipgan.cli.options"}
    offenders = [
        f"{module} -> {target}"
        for module, targets in sorted(graph.items())
        if module.startswith("lipgan.cli.")
        for target in sorted(targets)
        if target.startswith("lipgan.cli.") and target not in shared
    ]
    assert offenders == []
    from lipgan.cli.main import COMMANDS

    modules = {path.partition(":")[0] for path in COMMANDS.values()}
    on_disk = {
        f"lipgan.cli.{p.stem}"
        for p in (LIPGAN / "cli").glob("*.py")
        if p.stem not in ("__init__", "main", "options")
    }
    assert modules == on_disk
