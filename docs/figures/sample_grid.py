"""Write a sample grid PNG from a finished image run: restores the generator of RUN_DIR's latest
checkpoint (built from the gin config in RUN_DIR/run.json) and tiles N samples.

    .venv/bin/python docs/figures/sample_grid.py RUN_DIR OUT.png [N] [SCALE]

Made docs/figures/digits_wgangp.png with (see docs/figures/README.md for the training command):
    .venv/bin/python docs/figures/sample_grid.py runs/digits docs/figures/digits_wgangp.png 100 3
"""

import sys
from pathlib import Path

import tensorflow as tf

import gin
from lipgan.config import recorded, train_root
from lipgan.core.plugins import load_registry
from lipgan.plots.images import save_grid
from lipgan.run import rebuild


def main(run_dir: str, out: str, n: int = 100, scale: int = 3) -> None:
    text = rebuild.gin_config(rebuild.read(run_dir))
    recorded.parse_text(text, [], load_registry().registry)
    bindings = gin.get_bindings(train_root.train)
    data = bindings["dataset"](8, 0)
    generator = bindings["generator"](tuple(data.element_spec.shape[1:]))
    tf.train.Checkpoint(generator=generator).restore(
        tf.train.latest_checkpoint(str(Path(run_dir) / "checkpoints"))
    ).expect_partial()
    z = tf.random.stateless_normal([n, *generator.input_shape[1:]], seed=[0, 7])
    save_grid(out, generator(z, training=False).numpy(), scale=scale)
    print(out)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], *(int(a) for a in sys.argv[3:]))
