"""Seconds per 10,000 images for FID's network on this machine, with a same-sized stand-in.

The real 2015 graph cannot be downloaded here (no network), so this builds a GraphDef with its
interface (``ExpandDims`` -> ``ResizeBilinear`` to 299 -> ``Sub``/``Mul`` -> ... -> ``pool_3``
``[n, 1, 1, 2048]`` -> 1008 logits) around Keras' InceptionV3 with random weights, frozen to
constants, and times :func:`lipgan.metrics.inception.inception_features` on it: the same code
path, the same convolutions as the 2015 network (both are Inception-v3 at 299x299, Szegedy et al.
2016), a fused batch norm where the real graph has the unfused ``BatchNormWithGlobalNormalization``
(elementwise work, small beside the convolutions). It also prints the stand-in's convolution
FLOPs per image, counted from its layers, and the time of the ``pil_bicubic`` resize alone.

    python benchmarks/inception_features.py [--images 200] [--batch-size 50] [--size 32]
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time

import numpy as np


def conv_flops(model) -> float:
    """2 * multiply-adds of every Conv2D and Dense layer of a Keras model, per image."""
    import keras

    total = 0.0
    for layer in model.layers:
        if isinstance(layer, keras.layers.Conv2D):
            _, height, width, out = layer.output.shape
            kh, kw = layer.kernel_size
            total += 2.0 * height * width * out * kh * kw * layer.input.shape[-1]
        elif isinstance(layer, keras.layers.Dense):
            total += 2.0 * layer.kernel.shape[0] * layer.kernel.shape[1]
    return total


def standin_graph_def(seed: int = 0):
    import keras
    import tensorflow as tf
    from tensorflow.python.framework.convert_to_constants import (
        convert_variables_to_constants_v2,
    )

    keras.utils.set_random_seed(seed)
    body = keras.applications.InceptionV3(
        weights=None, include_top=False, pooling="avg", input_shape=(299, 299, 3)
    )
    spec = tf.TensorSpec([None, 299, 299, 3], tf.float32)
    concrete = tf.function(lambda x: body(x, training=False)).get_concrete_function(spec)
    frozen = convert_variables_to_constants_v2(concrete)
    rng = np.random.default_rng(seed)
    graph = tf.Graph()
    with graph.as_default():
        contents = tf.compat.v1.placeholder(tf.string, [], name="DecodeJpeg/contents")
        decoded = tf.io.decode_jpeg(contents, channels=3, name="DecodeJpeg")
        expanded = tf.expand_dims(tf.cast(decoded, tf.float32), 0, name="ExpandDims")
        resized = tf.raw_ops.ResizeBilinear(
            images=expanded, size=tf.constant([299, 299]), name="ResizeBilinear"
        )
        x = tf.multiply(tf.subtract(resized, 128.0, name="Sub"), 1 / 128, name="Mul")
        (pooled,) = tf.graph_util.import_graph_def(
            frozen.graph.as_graph_def(),
            input_map={frozen.inputs[0].name: x},
            return_elements=[frozen.outputs[0].name],
            name="body",
        )
        pool = tf.reshape(pooled, [-1, 1, 1, 2048], name="pool_3")
        flat = tf.reshape(pool, [1, 2048], name="pool_3/_reshape")
        w = tf.constant(rng.normal(size=(2048, 1008)).astype(np.float32), name="softmax/weights")
        b = tf.constant(np.zeros(1008, np.float32), name="softmax/biases")
        tf.nn.bias_add(tf.matmul(flat, w, name="softmax/logits/MatMul"), b, name="softmax/logits")
    return graph.as_graph_def(), conv_flops(body)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--images", type=int, default=200)
    parser.add_argument("--batch-size", type=int, default=50)
    parser.add_argument("--size", type=int, default=32, help="side of the input images")
    args = parser.parse_args()

    from lipgan.metrics.inception import inception_features, pil_bicubic, to_pixels

    graph_def, flops = standin_graph_def()
    images = np.random.default_rng(1).integers(0, 256, (args.images, args.size, args.size, 3))
    images = images.astype(np.uint8)
    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "standin.pb")
        with open(path, "wb") as f:
            f.write(graph_def.SerializeToString())
        print(f"stand-in graph: {os.path.getsize(path):,} bytes")
        inception_features(images[: args.batch_size], args.batch_size, path=path)  # warm up
        started, cpu = time.perf_counter(), time.process_time()
        pool3, logits = inception_features(images, args.batch_size, path=path)
        seconds, cpu = time.perf_counter() - started, time.process_time() - cpu
    assert pool3.shape == (args.images, 2048) and logits.shape == (args.images, 1008)
    pixels = to_pixels(images)
    started = time.perf_counter()
    pil_bicubic(pixels, (299, 299))
    resize_seconds = time.perf_counter() - started
    per_10k = seconds * 10_000 / args.images
    print(f"convolution + dense FLOPs per 299x299 image: {flops / 1e9:.2f} GFLOP")
    print(
        f"{args.images} images of {args.size}x{args.size}, batch {args.batch_size}: {seconds:.1f} s"
        f" -> {per_10k:,.0f} s per 10,000 images ({flops * args.images / seconds / 1e9:.0f} GFLOP/s)"
        f"; process CPU {cpu * 10_000 / args.images:,.0f} s per 10,000"
    )
    print(f"pil_bicubic resize alone: {resize_seconds * 10_000 / args.images:,.1f} s per 10,000")
    print(f"cpus: {os.cpu_count()}, load average: {' '.join(f'{v:.2f}' for v in os.getloadavg())}")


if __name__ == "__main__":
    main()
