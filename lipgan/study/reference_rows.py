"""The reference rows' names and PacGAN's published rows: what a report prints beside lipgan's rows.

Kept apart from :mod:`lipgan.study.references`, which computes the rows (samplers, the W1 floor,
the image rows), so that the report's parts (summary, tables, figure) name them without
importing the computation.
"""

from __future__ import annotations

REAL = "real data"
BOX = "uniform on the bounding box"
SUPPORT = "uniform on the support"
#: Uniform noise on the bounding box in expectation: a row is judged against this, not against
#: the few draws of the study's seeds (one low draw makes any row look as if it learned).
BOX_EXPECTED = "uniform on the bounding box, expected"
#: Draws behind the expectation (mode metrics only: no W1, which costs ~1 s per draw).
EXPECTATION_DRAWS = 200

#: PacGAN (Lin et al., NeurIPS 2018) Table 1: modes / high-quality % / reverse KL, mean ± s.e.
#: over 10 trials, 2,500 samples. Printed beside lipgan's rows, never as the same training.
PACGAN = {
    "ring": [
        ("GAN", "6.3±0.5", "98.2±0.2", "0.45±0.09"),
        ("PacGAN2", "7.9±0.1", "95.6±2.0", "0.07±0.03"),
        ("PacGAN4", "7.8±0.1", "95.9±1.4", "0.07±0.02"),
    ],
    "grid": [
        ("GAN", "17.3±0.8", "94.8±0.7", "0.70±0.07"),
        ("PacGAN2", "23.8±0.7", "91.3±0.8", "0.13±0.04"),
        ("PacGAN4", "24.8±0.2", "93.6±0.6", "0.04±0.01"),
    ],
}

#: PacGAN's training for those rows (fjxmlzn/PacGAN, synthetic_data_experiments/2DRing_GAN&PacGAN
#: and 2DGrid_GAN&PacGAN config.py: num_epoch 400 over num_sample 100,000 at batch_size 100).
PACGAN_BUDGET = "400 epochs of 100,000 samples at batch 100, i.e. 400,000 generator updates"

#: And their setup (Lin et al. 2018, Appendix; the same config.py files), not a WGAN's.
PACGAN_SETUP = (
    "a standard (non-Wasserstein) GAN, generator 4×400 ReLU + BatchNorm, discriminator 3×200 "
    "maxout, Adam 1e-4 (β₁ 0.8), batch 100, 100,000 training points"
)
