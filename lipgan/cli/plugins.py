"""``lipgan plugins``: what discovery found (constraints, strategies, executors, metrics,
loggers), what failed, what was blocked, and clashing names."""

from __future__ import annotations

import json

import click

from lipgan.cli.options import disable_option, discover


@click.command()
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
@disable_option
def plugins(as_json, disabled):
    """List the discovered plugins' constraints, strategies, executors, metrics and loggers."""
    discovery = discover(disabled)
    entries = []
    for entry in discovery.registry.entries():
        item = entry.as_dict()
        item["hooks"] = discovery.hooks_of(entry.plugin)
        entries.append(item)
    if as_json:
        payload = {
            "plugins": entries,
            "failed": [f.as_dict() for f in discovery.failures],
            "blocked": discovery.blocked,
            "clashes": discovery.clashes,
        }
        click.echo(json.dumps(payload, indent=2))
        return
    from lipgan.core.registry import KINDS

    name_width = max([20, *(len(e["name"]) for e in entries)])
    source_width = max([24, *(len(e["source"]) for e in entries)])  # a third party's is long
    for kind in KINDS:
        click.echo(f"{'strategies' if kind == 'strategy' else kind + 's'}:")
        for item in (e for e in entries if e["kind"] == kind):
            name, source = f"{item['name']:<{name_width}}", f"{item['source']:<{source_width}}"
            click.echo(f"  {name} {source} {item['description']}")
    for failure in discovery.failures:
        click.echo(f"failed: {failure.plugin} ({failure.source}): {failure.error}")
    for reason in discovery.clashes.values():
        click.echo(f"clash (unavailable): {reason}")
    if discovery.blocked:
        click.echo(f"blocked: {', '.join(discovery.blocked)}")
