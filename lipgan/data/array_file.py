"""Training data from a study's frozen copy of a user data set (``OUT/data/<name>.npz``).

:mod:`lipgan.study.own_data` checks a user's file or arrays once and writes the float32 ``train``
and ``held_out`` rows there; every cell of the study trains on the ``train`` rows through this
factory (gin: ``train.data = @array_file()``, ``array_file.path = '...'``). The held-out rows
are never read here: the cell's evaluation measures W1 against them
(:mod:`lipgan.study.own_metrics`).
"""

from __future__ import annotations

import json

import numpy as np


def array_file(path: str, split: str = "train", shuffle_buffer: int = 10_000):
    """``(global_batch_size, seed) -> tf.data.Dataset`` of shuffled, repeated global batches of
    the ``split`` rows of the frozen copy at ``path``, as :func:`lipgan.data.pipeline.dataset`
    makes them (static shapes, one shuffle per seed)."""
    with np.load(path, allow_pickle=False) as z:
        meta = json.loads(str(z["meta"]))

    def make(global_batch_size: int, seed: int):
        import tensorflow as tf

        with np.load(path, allow_pickle=False) as z:
            rows = z[split]
        ds = tf.data.Dataset.from_tensor_slices(rows)
        ds = ds.shuffle(min(shuffle_buffer, len(rows)), seed=seed, reshuffle_each_iteration=True)
        return ds.repeat().batch(global_batch_size, drop_remainder=True).prefetch(2)

    # A named data set to the run record: its name carries the content hash, so a run dir
    # resumes only on the same data, wherever the study dir has moved.
    make.dataset_name = f"file:{meta['name']}"
    make.settings = {"name": meta["name"], "sha256": meta["sha256"], "split": split}
    return make
