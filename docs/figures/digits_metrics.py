"""Fréchet digits distance and KID of every kept checkpoint of a digits run, with real and noise references.

    TFDS_DATA_DIR=/tmp/tfds .venv/bin/python docs/figures/digits_metrics.py runs/digits

Produced the table in docs/figures/README.md (with the classifier of its day, trained per data dir; lipgan now ships fixed weights).
"""

import sys
import time
from pathlib import Path

import numpy as np
import tensorflow as tf

import gin
from lipgan.config import recorded, train_root
from lipgan.core.plugins import load_registry
from lipgan.metrics import images as m
from lipgan.run import rebuild

run_dir = Path(sys.argv[1])
t = time.perf_counter()
clf = m.digits_classifier()
print(
    f"classifier test accuracy {clf.test_accuracy:.3f} ({time.perf_counter() - t:.1f}s incl. training if uncached)"
)
train, _ = m.real_digits("train")
test, _ = m.real_digits("test")
ftrain = m.digits_features(train, clf)
print("FDD real test vs train:", round(m.frechet_distance(ftrain, m.digits_features(test, clf)), 3))
print(
    "FDD uniform noise:",
    round(
        m.frechet_distance(
            ftrain,
            m.digits_features(
                np.random.default_rng(0).uniform(-1, 1, (1497, 16, 16, 1)).astype("float32"), clf
            ),
        ),
        3,
    ),
)
recorded.parse_text(rebuild.gin_config(rebuild.read(run_dir)), [], load_registry().registry)
b = gin.get_bindings(train_root.train)
shape = tuple(b["dataset"](8, 0).element_spec.shape[1:])
for ckpt in tf.train.get_checkpoint_state(str(run_dir / "checkpoints")).all_model_checkpoint_paths:
    g = b["generator"](shape)
    tf.train.Checkpoint(generator=g).restore(ckpt).expect_partial()
    fake = g(
        tf.random.stateless_normal([1497, *g.input_shape[1:]], seed=[0, 7]), training=False
    ).numpy()
    ff = m.digits_features(fake, clf)
    print(
        Path(ckpt).name,
        "FDD",
        round(m.frechet_distance(ftrain, ff), 3),
        "KID",
        [round(v, 4) for v in m.kid(ftrain, ff, 20, 500)],
    )
