"""The layering rules, checked on the source: gin only at the edge, the core free of plugin modules."""

import ast
from pathlib import Path

LIPGAN = Path(__file__).resolve().parents[1] / "lipgan"
GIN_EDGE = {"config.py", "cli.py"}


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
