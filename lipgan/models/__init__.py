"""Critic and generator families. Each factory takes the data shape and returns an unbuilt-free,
ready ``keras.Model``; the engine calls them inside ``strategy.scope()``.

Critics return one score per example (shape ``[b, 1]``); generators map ``[b, latent_dim]`` noise to
``[b, *data_shape]``. Critics contain no batch normalization: a gradient penalty is per example, and
batch statistics would couple the examples (the paper's advice).
"""

from lipgan.models.dcgan import dcgan_critic, dcgan_generator
from lipgan.models.mlp import mlp_critic, mlp_generator
from lipgan.models.resnet import resnet_critic, resnet_generator

__all__ = [
    "dcgan_critic",
    "dcgan_generator",
    "mlp_critic",
    "mlp_generator",
    "resnet_critic",
    "resnet_generator",
]
