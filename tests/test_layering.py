"""The layering rules, checked on the source: gin only at the edge, the core free of plugin modules."""

import ast
from pathlib import Path

LIPGAN = Path(__file__).resolve().parents[1] / "lipgan"
GIN_EDGE = {"config.py", "cli.py"}
#: Modules that may import the gin edge (lipgan.config): the CLI's, a study cell's process, and
#: the conformance kit's gin check. Below them, nothing parses gin.
CONFIG_CLIENTS = {
    "cli.py",
    "cli_shared.py",
    "rundir_cli.py",
    "cell_process.py",
    "testing/checks.py",
}


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
        if "gin" in imported_modules(p) and str(p.relative_to(LIPGAN)) not in GIN_EDGE
    ]
    assert offenders == []


def _imports_config(path: Path) -> bool:
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.ImportFrom) and node.module == "lipgan" and not node.level:
            if any(alias.name == "config" for alias in node.names):
                return True
        if isinstance(node, ast.ImportFrom) and node.module == "lipgan.config":
            return True
        if isinstance(node, ast.Import) and any(a.name == "lipgan.config" for a in node.names):
            return True
    return False


def test_only_the_edge_imports_the_gin_edge():
    """gin is parsed into a Trainer at the edge; the library below (study included) never
    reaches for lipgan.config. The study's two exceptions read a data set's shipped config (its
    train.steps budget, lipgan.study.spec.config_steps; its real images for the reference scores,
    lipgan.study.image_references): still to move to the edge (issue #38)."""
    offenders = [
        str(p.relative_to(LIPGAN))
        for p in core_modules()
        if _imports_config(p) and str(p.relative_to(LIPGAN)) not in CONFIG_CLIENTS | GIN_EDGE
    ]
    assert offenders == ["study/image_references.py", "study/spec.py"]


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
        if "_REGISTRY" in p.read_text() and p.name != "config.py"
    ]
    assert offenders == []


def test_every_module_has_a_place_in_the_documented_layers():
    """docs/architecture.md's layer diagram names every module and subpackage of the core."""
    layers = (LIPGAN.parent / "docs" / "architecture.md").read_text()
    layers = layers[layers.index("## Layers") : layers.index("## The plugin contract")]
    missing = [
        str(p.relative_to(LIPGAN))
        for p in sorted(LIPGAN.glob("*.py"))
        if p.name != "__init__.py" and p.name not in layers
    ] + [
        f"{p.name}/"
        for p in sorted(LIPGAN.iterdir())
        if (p / "__init__.py").exists() and f"{p.name}/" not in layers
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
    """``{'lipgan.trainer': {'lipgan.loop', ...}}``: which lipgan modules each one imports, at any
    depth (function-level imports included; ``if TYPE_CHECKING:`` blocks left out unless
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
    callbacks). TrainState lives in lipgan/train_state.py, below all three."""
    graph = module_graph(type_checking=True)
    assert import_cycles(graph) == []
    assert graph["lipgan.callbacks"] == {"lipgan.train_state"}
    assert graph["lipgan.train_state"] == set()


def test_the_training_loop_is_not_given_the_trainer():
    """The loop reads a narrow input state (lipgan/training_input.py), not the trainer."""
    graph = module_graph(type_checking=True)
    assert "lipgan.trainer" not in graph["lipgan.loop"]
    assert "lipgan.training_input" in graph["lipgan.loop"]
    assert "trainer" not in (LIPGAN / "loop.py").read_text().split('"""', 2)[2]
