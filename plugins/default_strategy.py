"""``default``: TensorFlow's default strategy, one device, no replication."""

import tensorflow as tf

from lipgan import StrategyPlugin, hookimpl


class Default(StrategyPlugin):
    """The default (no-op) distribution strategy: one replica on the first visible device."""

    name = "default"
    description = "One replica on the default device (tf.distribute.get_strategy())."

    def create(self):
        return tf.distribute.get_strategy()


@hookimpl
def lipgan_register_strategies(register):
    register(Default)
