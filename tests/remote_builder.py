"""A tiny TFDS builder that downloads its data over HTTP (from a local test server)."""

import numpy as np
import tensorflow_datasets as tfds


class LipganTinyRemote(tfds.core.GeneratorBasedBuilder):
    """Three 2-D points in a CSV file at :attr:`URL`."""

    VERSION = tfds.core.Version("1.0.0")
    URL = "http://127.0.0.1:9/points.csv"  # set by the test to its server's address

    def _info(self):
        return tfds.core.DatasetInfo(
            builder=self,
            features=tfds.features.FeaturesDict(
                {"x": tfds.features.Tensor(shape=(2,), dtype=np.float32)}
            ),
        )

    def _split_generators(self, dl_manager):
        return {"train": self._generate_examples(dl_manager.download(type(self).URL))}

    def _generate_examples(self, path):
        for i, line in enumerate(path.read_text().split()):
            yield i, {"x": np.array([float(v) for v in line.split(",")], np.float32)}
