"""Sample grids: tiling, PNG output and the TensorBoard image."""

import numpy as np
import pytest

from lipgan.plots.images import grid, save_grid, summary_grid, to_uint8


def test_to_uint8_maps_the_tanh_range_and_clips():
    np.testing.assert_array_equal(
        to_uint8(np.array([-1.0, 0.0, 1.0, 2.0, -3.0])), [0, 128, 255, 255, 0]
    )


def test_grid_places_images_row_by_row_with_padding():
    images = np.stack([np.full((2, 3, 1), v) for v in (-1.0, 0.0, 1.0)])  # 3 images of 2x3
    tiled = grid(images, cols=2, pad=1)
    assert tiled.shape == (2 * 3 + 1, 2 * 4 + 1, 1) and tiled.dtype == np.uint8
    assert (tiled[1:3, 1:4] == 0).all()  # image 0, black
    assert (tiled[1:3, 5:8] == 128).all()  # image 1, right of it
    assert (tiled[4:6, 1:4] == 255).all()  # image 2, next row
    assert (tiled[4:6, 5:8] == 0).all()  # empty cell
    assert grid(np.zeros((10, 4, 4, 3))).shape == (3 * 5 + 1, 4 * 5 + 1, 3)  # near-square default


def test_grid_rejects_non_image_batches():
    with pytest.raises(ValueError, match="n, h, w, c"):
        grid(np.zeros((4, 4)))


@pytest.mark.parametrize("channels", [1, 3])
def test_save_grid_writes_a_png_of_the_grid(tmp_path, channels):
    import matplotlib.image

    rng = np.random.default_rng(0)
    images = rng.uniform(-1, 1, (4, 8, 8, channels))
    path = save_grid(tmp_path / "sub" / "samples.png", images, cols=2, scale=2)
    png = matplotlib.image.imread(path)
    assert png.shape[:2] == (2 * (2 * 9 + 1), 2 * (2 * 9 + 1))
    expected = grid(images, cols=2).repeat(2, 0).repeat(2, 1)[..., 0] / 255.0
    np.testing.assert_allclose(png[..., 0], expected, atol=1 / 255 + 1e-6)


def test_summary_grid_logs_one_image(tmp_path):
    import tensorflow as tf

    writer = tf.summary.create_file_writer(str(tmp_path))
    with writer.as_default():
        summary_grid("samples", np.zeros((4, 8, 8, 1)), step=3)
    writer.close()
    events = list(tmp_path.glob("events.out.tfevents.*"))
    assert len(events) == 1
    tags = [
        (value.tag, event.step)
        for event in tf.compat.v1.train.summary_iterator(str(events[0]))
        for value in event.summary.value
    ]
    assert tags == [("samples", 3)]
