"""FID's network (lipgan.metrics.inception) and its weights file (lipgan.metrics.weights).

The real 2015 graph cannot be downloaded here, so the plumbing is checked on a small GraphDef
that this file builds with the real graph's interface: a JPEG decoder feeding ``ExpandDims``,
TF1's ``ResizeBilinear`` to a constant size, ``Sub``/``Mul`` to [-1, 1], an ``AvgPool`` named
``pool_3`` of shape ``[1, 1, 1, C]``, the batch-1 ``pool_3/_reshape`` and the classifier
``softmax/logits/MatMul`` + ``softmax/logits``. The weights file is served by a loopback HTTP
server from an archive built here.
"""

import functools
import http.server
import io
import tarfile
import threading
import time

import numpy as np
import pytest

from lipgan.metrics import inception, weights
from lipgan.metrics.weights import WeightsError, WeightsSpec

SIZE, CHANNELS, CLASSES = 13, 6, 5


def standin_graph_def(size=SIZE, channels=CHANNELS, classes=CLASSES, seed=0):
    """The real graph's interface on a few weights; its batch norm is the real graph's
    ``BatchNormWithGlobalNormalization`` (removed at GraphDef version 9, so the file claims an old
    producer version, as the 2015 file does), its concatenation the old ``Concat``, and every node
    records its batch-1 output shapes (``_output_shapes``)."""
    import tensorflow as tf

    rng = np.random.default_rng(seed)
    const = lambda *shape: tf.constant(rng.normal(size=shape).astype(np.float32))  # noqa: E731
    half = channels // 2
    graph = tf.Graph()
    with graph.as_default():
        contents = tf.compat.v1.placeholder(tf.string, [], name="DecodeJpeg/contents")
        decoded = tf.io.decode_jpeg(contents, channels=3, name="DecodeJpeg")
        expanded = tf.expand_dims(tf.cast(decoded, tf.float32, name="Cast"), 0, name="ExpandDims")
        resized = tf.raw_ops.ResizeBilinear(
            images=expanded,
            size=tf.constant([size, size], name="ResizeBilinear/size"),
            align_corners=False,
            half_pixel_centers=False,
            name="ResizeBilinear",
        )
        x = tf.multiply(tf.subtract(resized, 128.0, name="Sub"), 1 / 128, name="Mul")
        conv = tf.nn.conv2d(x, const(3, 3, 3, half) / 3, 1, "VALID", name="conv")
        tf.identity(conv, name="conv/batchnorm")  # made a BatchNormWithGlobalNormalization below
        for part in ("mean", "variance", "beta", "gamma"):
            tf.constant(rng.uniform(0.5, 1.5, half).astype(np.float32), name=f"conv/{part}")
        normed = graph.get_tensor_by_name("conv/batchnorm:0")
        hidden = tf.raw_ops.Concat(concat_dim=3, values=[tf.nn.relu(normed), tf.nn.relu(-normed)])
        pool = tf.nn.avg_pool2d(hidden, size - 2, 1, "VALID", name="pool_3")
        flat = tf.reshape(pool, [1, channels], name="pool_3/_reshape")
        w = tf.identity(const(channels, classes), name="softmax/weights")
        b = tf.identity(const(classes), name="softmax/biases")
        matmul = tf.matmul(flat, w, name="softmax/logits/MatMul")
        logits = tf.nn.bias_add(matmul, b, name="softmax/logits")
        tf.nn.softmax(logits, name="softmax")
    graph_def = graph.as_graph_def(add_shapes=True)
    batchnorm = next(n for n in graph_def.node if n.name == "conv/batchnorm")
    batchnorm.op = "BatchNormWithGlobalNormalization"
    del batchnorm.input[:]
    batchnorm.input.extend(["conv", "conv/mean", "conv/variance", "conv/beta", "conv/gamma"])
    batchnorm.attr["variance_epsilon"].f = 1e-3
    batchnorm.attr["scale_after_normalization"].b = True
    graph_def.versions.producer = 5
    return graph_def


@pytest.fixture(scope="module")
def graph_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("graph") / "classify_image_graph_def.pb"
    path.write_bytes(standin_graph_def().SerializeToString())
    return str(path)


def features(images, graph_file, **kwargs):
    return inception.inception_features(images, path=graph_file, **kwargs)


def pixels(n, h, w, c=3, seed=1):
    return np.random.default_rng(seed).integers(0, 256, (n, h, w, c)).astype(np.uint8)


# -- reference resizes, written from their definitions ------------------------------------------
def legacy_bilinear(images, size):
    """TF1 ResizeBilinear, align_corners=False, half_pixel_centers=False: source = i * in/out."""

    def axis(n_in, n_out):
        src = np.arange(n_out) * (n_in / n_out)
        low = np.floor(src).astype(int)
        return low, np.minimum(low + 1, n_in - 1), (src - low).astype(np.float64)

    (y0, y1, fy), (x0, x1, fx) = axis(images.shape[1], size), axis(images.shape[2], size)
    im = images.astype(np.float64)
    top = (
        im[:, y0][:, :, x0] * (1 - fx)[None, None, :, None]
        + im[:, y0][:, :, x1] * fx[None, None, :, None]
    )
    bottom = (
        im[:, y1][:, :, x0] * (1 - fx)[None, None, :, None]
        + im[:, y1][:, :, x1] * fx[None, None, :, None]
    )
    return top * (1 - fy)[None, :, None, None] + bottom * fy[None, :, None, None]


def keys_bicubic(images, size):
    """PIL's bicubic (Keys, a = -0.5) for upsampling: pixel centres at (i + 0.5) * in/out, taps
    outside the image dropped and the remaining weights renormalized (Pillow's ``Resample.c``)."""

    def kernel(t):
        t, a = np.abs(t), -0.5
        near = (a + 2) * t**3 - (a + 3) * t**2 + 1
        far = a * t**3 - 5 * a * t**2 + 8 * a * t - 4 * a
        return np.where(t < 1, near, np.where(t < 2, far, 0.0))

    def matrix(n_in, n_out):
        centre = (np.arange(n_out) + 0.5) * n_in / n_out
        m = kernel(np.arange(n_in)[None, :] + 0.5 - centre[:, None])
        return m / m.sum(1, keepdims=True)

    rows, cols = matrix(images.shape[1], size[0]), matrix(images.shape[2], size[1])
    return np.einsum("yh,nhwc,xw->nyxc", rows, images.astype(np.float64), cols)


# -- the network ---------------------------------------------------------------------------------
def test_features_have_the_graphs_widths_and_are_float64(graph_file):
    pool3, logits = features(pixels(4, 20, 20), graph_file)
    assert pool3.shape == (4, CHANNELS) and logits.shape == (4, CLASSES)
    assert pool3.dtype == np.float64 and logits.dtype == np.float64
    assert inception.load_network(graph_file).image_size == (SIZE, SIZE)


def test_the_graphs_own_bilinear_resize_runs(graph_file):
    """Any input size goes through the graph's ResizeBilinear: features of a 32x32 image equal
    those of its legacy-bilinear resize fed at the graph's size (where the resize is identity)."""
    images = pixels(3, 32, 27)
    resized = legacy_bilinear(images, SIZE).astype(np.float32)
    got = features(images, graph_file)
    want = features(resized, graph_file, value_range=(0, 255), quantize=False)
    np.testing.assert_allclose(got[0], want[0], rtol=1e-5, atol=1e-5)
    # and the resize matters: without it (nearest neighbour) the features differ
    nearest = images[:, :: 32 // SIZE][:, :SIZE][:, :, :: 27 // SIZE][:, :, :SIZE]
    assert np.abs(features(nearest, graph_file)[0] - got[0]).max() > 1e-3


def test_batches_do_not_change_the_features(graph_file):
    images = pixels(7, 16, 16)
    one = features(images, graph_file, batch_size=1)
    seven = features(images, graph_file, batch_size=7)
    three = features(images, graph_file, batch_size=3)
    for a, b in ((one, seven), (three, seven)):
        np.testing.assert_allclose(a[0], b[0], rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(a[1], b[1], rtol=1e-5, atol=1e-5)


def test_logits_are_the_graphs_own_at_batch_one_where_the_graph_works(graph_file):
    import tensorflow as tf

    graph_def = inception._read_graph_def(graph_file)
    graph = tf.Graph()
    with graph.as_default():
        images = tf.compat.v1.placeholder(tf.float32, [None, None, None, 3])
        (own,) = tf.graph_util.import_graph_def(
            graph_def, input_map={"ExpandDims:0": images}, return_elements=["softmax/logits:0"]
        )
    image = pixels(1, 16, 16).astype(np.float32)
    with tf.compat.v1.Session(graph=graph) as session:
        want = session.run(own, {images: image})
        # the batch-1 export that TTUR patches around: the graph's own logits refuse a batch
        with pytest.raises(tf.errors.InvalidArgumentError):
            session.run(own, {images: pixels(7, 16, 16).astype(np.float32)})
    biased = features(image, graph_file, value_range=(0, 255), logits_bias=True)[1]
    unbiased = features(image, graph_file, value_range=(0, 255))[1]
    np.testing.assert_allclose(biased, want, rtol=1e-5, atol=1e-5)
    bias = graph.get_tensor_by_name("import/softmax/biases:0")
    with tf.compat.v1.Session(graph=graph) as session:
        bias = session.run(bias)
    np.testing.assert_allclose(unbiased, want - bias, rtol=1e-5, atol=1e-5)


def test_value_ranges_dtypes_and_grayscale_are_converted_explicitly(graph_file):
    images = pixels(3, 16, 16)
    want = features(images, graph_file)
    as_unit = images.astype(np.float32) / 127.5 - 1.0  # lipgan's [-1, 1]
    as_pixels = images.astype(np.float64)
    for got in (
        features(as_unit, graph_file),
        features(as_pixels, graph_file, value_range=(0, 255)),
    ):
        np.testing.assert_allclose(got[0], want[0], rtol=1e-6, atol=1e-6)
    gray = pixels(2, 16, 16, c=1)
    np.testing.assert_allclose(
        features(gray, graph_file)[0], features(np.repeat(gray, 3, -1), graph_file)[0], rtol=1e-6
    )
    np.testing.assert_array_equal(inception.to_pixels(gray[..., 0]), inception.to_pixels(gray))
    with pytest.raises(ValueError, match=r"outside their stated value_range \(-1, 1\)"):
        features(as_pixels, graph_file)  # pixel values passed as if in [-1, 1]
    with pytest.raises(ValueError, match="resize must be one of"):
        features(images, graph_file, resize="bilinear")


def test_quantize_rounds_to_whole_pixel_values():
    x = np.array([-1.0, -0.999, 0.0, 0.5, 1.0], np.float32).reshape(1, 1, 5, 1)
    np.testing.assert_array_equal(inception.to_pixels(x)[0, 0, :, 0], [0, 0, 128, 191, 255])
    raw = inception.to_pixels(x, quantize=False)[0, 0, :, 0]
    np.testing.assert_allclose(raw, [0, 0.1275, 127.5, 191.25, 255], rtol=1e-5, atol=1e-5)


def test_pil_bicubic_is_clean_fids_resize(graph_file):
    images = pixels(2, 8, 11).astype(np.float32)
    ours = inception.pil_bicubic(images, (29, 31))
    assert ours.shape == (2, 29, 31, 3) and ours.dtype == np.float32
    np.testing.assert_allclose(ours, keys_bicubic(images, (29, 31)), atol=2e-3)
    # PIL's own 8-bit RGB bicubic (fixed-point weights, rounded, clipped between its two passes)
    # agrees to a pixel value on a smooth image, which does not overshoot
    from PIL import Image

    y, x = np.mgrid[0:8, 0:11]
    smooth = (
        128 + 60 * np.sin(y / 3.0)[..., None] * np.cos(x[..., None] / 4.0 + np.arange(3))
    ).astype(np.uint8)
    rgb = np.asarray(Image.fromarray(smooth).resize((31, 29), Image.BICUBIC), np.float32)
    ours_smooth = inception.pil_bicubic(smooth[None].astype(np.float32), (29, 31))[0]
    assert np.abs(rgb - ours_smooth).max() <= 1.0
    # through the network the graph's resize is then the identity
    got = features(images.astype(np.uint8), graph_file, resize="pil_bicubic")[0]
    resized = inception.pil_bicubic(images, (SIZE, SIZE))
    want = inception.load_network(graph_file).run(resized)[0]  # overshoots 0..255 as is
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def test_a_graph_without_the_inception_tensors_is_refused(tmp_path):
    import tensorflow as tf

    graph = tf.Graph()
    with graph.as_default():
        tf.compat.v1.placeholder(tf.float32, [None, 3], name="ExpandDims")
    path = tmp_path / "other.pb"
    path.write_bytes(graph.as_graph_def().SerializeToString())
    with pytest.raises(WeightsError, match="is not the 2015 Inception graph: no pool_3, "):
        inception.load_network(str(path))
    (tmp_path / "junk.pb").write_bytes(b"\xff" * 64)
    with pytest.raises(WeightsError, match="is not a TensorFlow GraphDef"):
        inception.load_network(str(tmp_path / "junk.pb"))


# -- the weights file ----------------------------------------------------------------------------
MEMBER = "classify_image_graph_def.pb"
PAYLOAD = b"not really a graph, but bytes to check " * 100


def make_archive(folder, payload=PAYLOAD, member=MEMBER):
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        info = tarfile.TarInfo(member)
        info.size = len(payload)
        tar.addfile(info, io.BytesIO(payload))
    path = folder / "inception-2015-12-05.tgz"
    path.write_bytes(buffer.getvalue())
    return path


def spec_for(url, archive, payload=PAYLOAD):
    return WeightsSpec(
        name="inception-test",
        url=url,
        member=MEMBER,
        archive_size=archive.stat().st_size,
        member_size=len(payload),
    )


@pytest.fixture
def server(tmp_path):
    """A loopback HTTP server for ``tmp_path/served``; yields its base URL."""
    served = tmp_path / "served"
    served.mkdir()
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(served))
    handler.log_message = lambda *args: None
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}", served
    httpd.shutdown()
    httpd.server_close()


def test_first_use_downloads_checks_and_caches(server, tmp_path, monkeypatch):
    monkeypatch.delenv(weights.GRAPH_ENV, raising=False)
    url, served = server
    spec = spec_for(f"{url}/inception-2015-12-05.tgz", make_archive(served))
    cache = tmp_path / "cache"
    path = weights.weights_path(spec, cache=cache)
    assert path == cache / "inception-test" / MEMBER and path.read_bytes() == PAYLOAD
    assert sorted(p.name for p in path.parent.iterdir()) == [MEMBER]  # no partial files left
    # cached now: no server needed
    gone = WeightsSpec(**{**spec.__dict__, "url": "http://127.0.0.1:9/gone.tgz"})
    assert weights.weights_path(gone, cache=cache) == path
    monkeypatch.setenv(weights.CACHE_ENV, str(cache))
    assert weights.weights_path(gone) == path


def test_a_download_of_the_wrong_size_leaves_nothing_behind(server, tmp_path, monkeypatch):
    monkeypatch.delenv(weights.GRAPH_ENV, raising=False)
    url, served = server
    archive = make_archive(served)
    spec = WeightsSpec(**{**spec_for(f"{url}/{archive.name}", archive).__dict__, "archive_size": 1})
    with pytest.raises(WeightsError, match=r"bytes, not the 1 of the published file"):
        weights.weights_path(spec, cache=tmp_path / "cache")
    assert list((tmp_path / "cache" / "inception-test").iterdir()) == []
    missing = spec_for(f"{url}/nothing-here.tgz", archive)
    with pytest.raises(WeightsError, match="downloading .*nothing-here.tgz failed"):
        weights.weights_path(missing, cache=tmp_path / "cache")
    assert list((tmp_path / "cache" / "inception-test").iterdir()) == []


def test_offline_is_one_line_naming_file_url_and_place_within_seconds(tmp_path, monkeypatch):
    from tests.conftest import free_port

    monkeypatch.delenv(weights.GRAPH_ENV, raising=False)
    url = f"http://127.0.0.1:{free_port()}/inception-2015-12-05.tgz"
    spec = WeightsSpec(name="inception-test", url=url, member=MEMBER)
    started = time.monotonic()
    with pytest.raises(WeightsError) as info:
        weights.weights_path(spec, cache=tmp_path / "cache")
    assert time.monotonic() - started < 10
    message = str(info.value)
    target = tmp_path / "cache" / "inception-test" / MEMBER
    assert "\n" not in message
    assert f"cannot download {MEMBER}" in message and url in message
    assert f"put {MEMBER} from inside it at {target}" in message
    with pytest.raises(WeightsError, match=f"downloading is off: download {url}"):
        weights.weights_path(spec, cache=tmp_path / "cache", download=False)


def test_a_local_copy_wins_as_file_or_archive(tmp_path, monkeypatch):
    archive = make_archive(tmp_path)
    spec = spec_for("http://127.0.0.1:9/never-asked.tgz", archive)
    graph = tmp_path / MEMBER
    graph.write_bytes(PAYLOAD)
    monkeypatch.setenv(weights.GRAPH_ENV, str(graph))
    assert weights.weights_path(spec, cache=tmp_path / "cache") == graph
    monkeypatch.setenv(weights.GRAPH_ENV, str(archive))
    extracted = weights.weights_path(spec, cache=tmp_path / "cache")
    assert extracted == tmp_path / "cache" / "inception-test" / MEMBER
    assert extracted.read_bytes() == PAYLOAD
    monkeypatch.setenv(weights.GRAPH_ENV, str(tmp_path / "absent.pb"))
    with pytest.raises(WeightsError, match="absent.pb, which is not a file"):
        weights.weights_path(spec, cache=tmp_path / "cache")
    short = tmp_path / "short.pb"
    short.write_bytes(PAYLOAD[:10])
    with pytest.raises(WeightsError, match="has 10 bytes, not the"):
        weights.weights_path(spec, local=short, cache=tmp_path / "cache")


def test_the_network_finds_its_graph_through_the_weights_setting(graph_file, monkeypatch):
    from pathlib import Path

    monkeypatch.setenv(weights.GRAPH_ENV, graph_file)
    standin = WeightsSpec(name="x", url="http://127.0.0.1:9/x.tgz", member=MEMBER)
    with pytest.raises(WeightsError, match="not the 95,673,916 of the published file"):
        weights.weights_path()  # the real file's size is checked on a local copy too
    monkeypatch.setattr(inception, "weights_path", functools.partial(weights.weights_path, standin))
    assert inception.weights_path() == Path(graph_file)
    images = pixels(2, 10, 10)
    got = inception.inception_features(images)
    np.testing.assert_array_equal(got[0], features(images, graph_file)[0])


def test_a_name_lookup_that_hangs_is_cut_short(tmp_path, monkeypatch):
    """Offline machines can wait long on their resolvers; the socket timeout does not bound it."""
    import socket

    monkeypatch.delenv(weights.GRAPH_ENV, raising=False)
    monkeypatch.setattr(weights, "CONNECT_TIMEOUT", 0.5)

    def hang(*args, **kwargs):
        time.sleep(30)  # a daemon thread; it then fails as a lookup does, quietly
        raise socket.gaierror("lookup timed out")

    monkeypatch.setattr(socket, "getaddrinfo", hang)
    spec = WeightsSpec(name="inception-test", url="http://inception.invalid/x.tgz", member=MEMBER)
    started = time.monotonic()
    with pytest.raises(WeightsError, match=r"inception.invalid:80: no answer within 0.5 s"):
        weights.weights_path(spec, cache=tmp_path / "cache")
    assert time.monotonic() - started < 5
