"""Floors of the image scores: real data against real data, and uniform noise, at stated sample counts.

A model's FID, KID, IS or PRDC means something only beside what real data scores against itself
at the same n (FID is biased upward at small n; KID is unbiased) and what an image that learned
nothing scores. This prints, for one feature space, a markdown table of

* two disjoint random halves of the training split (``--repeats`` random splits, mean ± std);
* the held-out split against as many training images, and against the whole training split (the
  reference every digits cell is scored against: ``digits_fd`` compares a sample with all the
  training digits, so this row is the floor to set beside a study's digits rows);
* uniform noise in [-1, 1] at the models' resolution (digits: the 16×16 the generators draw, not
  the stored 32×32, whose noise the resize to 16×16 would average to a low-contrast grey that no
  generator outputs) against one half (``--repeats`` draws).

Feature spaces: ``digits`` (the 64-d features and 10 logits of lipgan's digits classifier, whose
weights ship with lipgan; runs offline) and ``inception`` (FID's 2015 Inception network,
``lipgan.metrics.inception.inception_features``, which needs its weights on disk). Data sets:
``lipgan_digits`` (offline) and ``cifar10`` (TFDS, prepared in the data dir). Produced the tables
in docs/metrics.md:

    TFDS_DATA_DIR=/tmp/tfds python docs/score_floors.py --features digits --dataset lipgan_digits
"""

from __future__ import annotations

import argparse
import os
import sys
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import numpy as np  # noqa: E402

from lipgan.core.errors import LipganError  # noqa: E402
from lipgan.metrics import image_scores  # noqa: E402

KID_SUBSETS = 100
PRDC_K = 5
IS_SPLITS = 10


def load_images(dataset: str, split: str, limit: int | None) -> np.ndarray:
    """``[n, h, w, c]`` float32 images in [-1, 1]."""
    if dataset == "lipgan_digits":
        from lipgan.metrics.images import real_digits

        images = real_digits(split)[0]
    else:
        import tensorflow_datasets as tfds

        data = tfds.as_numpy(tfds.load(dataset, split=split, batch_size=-1, download=False))
        images = data["image"].astype(np.float32) / 127.5 - 1.0
    return images[:limit] if limit else images


def model_shape(dataset: str, train: np.ndarray) -> tuple:
    """One generated image's shape: the digits models draw 16×16 (``DIGITS_SIZE``), the stored
    digits are 32×32; other data sets are generated at their stored size."""
    if dataset == "lipgan_digits":
        from lipgan.metrics.images import DIGITS_SIZE

        return (DIGITS_SIZE, DIGITS_SIZE, train.shape[-1])
    return tuple(train.shape[1:])


def feature_extractor(name: str):
    """``images -> (features [n, d], logits [n, classes])`` for the named feature space."""
    if name == "digits":
        from lipgan.metrics import images as m

        classifier = m.digits_classifier()
        return lambda x: (m.digits_features(x, classifier), m.digits_logits(x, classifier))
    try:
        from lipgan.metrics.inception import inception_features
    except ImportError as exc:
        sys.exit(f"Error: FID's Inception network is not available here ({exc})")
    # Grayscale or RGB, any size, [-1, 1]; pool3 and the 1008 bias-free logits (IS's).
    return lambda x: tuple(np.asarray(a) for a in inception_features(x))


def scores(real_feats, fake_feats, fake_logits) -> dict[str, float]:
    out = {"fid": image_scores.fid(real_feats, fake_feats)}
    subset = min(1000, len(real_feats), len(fake_feats))  # torch-fidelity's 1000 where n allows
    out["kid"] = image_scores.kid(real_feats, fake_feats, subset, KID_SUBSETS)[0]
    out.update(image_scores.prdc(real_feats, fake_feats, k=PRDC_K))
    out["is"] = image_scores.inception_score(fake_logits, splits=IS_SPLITS)[0]
    return out


def cell(values: list[float], key: str) -> str:
    mean, std = np.mean(values), np.std(values)
    if key == "kid":
        return f"{mean:.3g} ± {std:.2g}"
    digits = 2 if key == "fid" else 3
    return f"{mean:.{digits}f} ± {std:.{digits}f}"


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--features", choices=["digits", "inception"], default="digits")
    parser.add_argument("--dataset", default="lipgan_digits")
    parser.add_argument("--train-split", default="train")
    parser.add_argument("--test-split", default="test")
    parser.add_argument("--limit", type=int, default=None, help="use the first N training images")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)

    start = time.perf_counter()
    try:
        extract = feature_extractor(args.features)
        train = load_images(args.dataset, args.train_split, args.limit)
        test = load_images(args.dataset, args.test_split, None)
        train_feats, train_logits = extract(train)
        test_feats, test_logits = extract(test)
    except LipganError as exc:  # no weights or no data set offline: one line, no traceback
        sys.exit(f"Error: {exc}")
    rng = np.random.default_rng(args.seed)
    half, n_test = len(train) // 2, len(test)
    halves, held_out, against_all, noise = [], [], [], []
    for _ in range(args.repeats):
        order = rng.permutation(len(train))
        a, b = order[:half], order[half : 2 * half]
        halves.append(scores(train_feats[a], train_feats[b], train_logits[b]))
        # At the held-out split's own n, so that PRDC compares sets of one size.
        held_out.append(scores(train_feats[order[:n_test]], test_feats, test_logits))
        # Against every training image: what digits_fd compares a study cell's sample with.
        against_all.append(scores(train_feats, test_feats, test_logits))
        noise_images = rng.uniform(-1, 1, (half, *model_shape(args.dataset, train))).astype(
            np.float32
        )
        noise.append(scores(train_feats[a], *extract(noise_images)))

    rows = [
        (f"real vs real: two halves of {args.train_split}", f"{half} vs {half}", halves),
        (
            f"real vs real: {args.test_split} vs as many {args.train_split}",
            f"{n_test} vs {n_test}",
            held_out,
        ),
        (
            f"real vs real: {args.test_split} vs all {args.train_split}",
            f"{n_test} vs {len(train)}",
            against_all,
        ),
        ("uniform noise vs one half", f"{half} vs {half}", noise),
    ]
    keys = ["fid", "kid", "precision", "recall", "density", "coverage", "is"]
    print(
        f"{args.dataset}, {args.features} features ({train_feats.shape[1]}-d, "
        f"{train_logits.shape[1]} classes); KID {KID_SUBSETS} subsets of min(1000, n), "
        f"PRDC k = {PRDC_K}, IS over {IS_SPLITS} splits of the second set; mean ± std over "
        f"{args.repeats} random splits / noise draws ({time.perf_counter() - start:.0f} s)\n"
    )
    print("| pair | n | FID | KID | precision | recall | density | coverage | IS |")
    print("|---|---|" + "---|" * len(keys))
    for name, n, results in rows:
        cells = [cell([r[key] for r in results], key) for key in keys]
        print(f"| {name} | {n} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
