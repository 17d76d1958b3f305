"""``lipgan config show``: the config ``lipgan run`` would use, resolved, without training."""

from __future__ import annotations

import json

import click

from lipgan.cli.options import (
    DEFAULT_CONFIG,
    config_options,
    disable_option,
    discover,
    parse,
    strategy_option,
    tensorflow_after_checks,
)


@click.group(name="config")
def config_group():
    """Inspect configs without training."""


@config_group.command(name="show")
@config_options
@strategy_option
@click.option("--json", "as_json", is_flag=True, help="The bindings as a JSON object.")
@disable_option
def config_show(gin_files, bindings, strategy_name, as_json, disabled):
    """Print the config that `lipgan run` would use (files + bindings, resolved), then exit."""
    tensorflow_after_checks(list(gin_files) or [DEFAULT_CONFIG], bindings)
    import gin
    from lipgan.config.recorded import bindings_of
    from lipgan.config.train_root import check_settings

    parse(discover(disabled), list(gin_files) or [DEFAULT_CONFIG], bindings, strategy_name)
    # gin's values as train() would get them (macros resolved, @x() evaluated, factories not
    # called), checked as `lipgan run` checks them: what is printed is a config run accepts.
    check_settings(gin.get_bindings("train"))
    text = gin.config_str()
    click.echo(json.dumps(bindings_of(text), indent=2) if as_json else text.rstrip())
