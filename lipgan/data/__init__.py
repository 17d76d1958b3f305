"""Datasets through tensorflow-datasets, with lipgan's own offline builders.

``lipgan.data.toy`` defines the builder ``lipgan_toy`` (8 Gaussians, 25 Gaussians, Swiss roll) and
``lipgan.data.digits`` the builder ``lipgan_digits`` (scikit-learn's UCI digits at 32x32), and
``lipgan.data.shapes`` the builder ``lipgan_shapes`` (coloured shapes, CIFAR-10's 32x32 RGB
stand-in); all generate their data locally, so the shipped toy and digits configs need no network. Importing this package
registers nothing: builders are imported when a dataset is loaded.
"""

from lipgan.data.pipeline import load_examples, mock_data

__all__ = ["load_examples", "mock_data"]
