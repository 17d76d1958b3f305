"""The built-in metrics, registered through ``lipgan_register_metrics`` as a third party's are.

Each says which data it applies to; ``lipgan eval`` (and every periodic evaluation) computes all
that apply unless ``--metric NAME`` picks some. What each value means, and its floor: docs/metrics.md.
"""

from lipgan import hookimpl
from lipgan.core.metric import EvalData, Metric


def _unprefixed(values: dict) -> dict:
    return {k.removeprefix("eval/"): v for k, v in values.items()}


class CriticWasserstein(Metric):
    """The critic's own estimate of W1: mean D(real) − mean D(fake)."""

    name = "critic_wasserstein"
    description = "The critic's W1 estimate, E D(real) − E D(fake) (every data)."

    def compute(self, data: EvalData) -> dict:
        from lipgan.metrics.evaluation import critic_wasserstein

        return {"critic_wasserstein": critic_wasserstein(data.critic, data.real, data.fake)}


class ToyMetrics(Metric):
    """PacGAN's mode metrics and the exact W1 on lipgan's toy sets."""

    name = "toy"
    description = "Modes, high quality, reverse KL (PacGAN) and exact W1 with its floor (toy sets)."

    def applies(self, data: EvalData) -> bool:
        return data.toy is not None

    def compute(self, data: EvalData) -> dict:
        from lipgan.metrics.toy import toy_metrics

        return toy_metrics(data.toy, data.fake, data.real, floor=data.w1_floor)


class DataW1(Metric):
    """W1 to the data, with its real-vs-real floor, on data lipgan has no other metric for."""

    name = "data_w1"
    description = "W1 to the data and its real-vs-real floor (data with no metric of its own)."
    needs_more_real = True

    def applies(self, data: EvalData) -> bool:
        return data.toy is None and not (data.is_image and (data.digits or data.inception_weights))

    def compute(self, data: EvalData) -> dict:
        from lipgan.metrics.evaluation import data_w1

        return _unprefixed(data_w1(data.fake, data.real, data.real_again()))


class DigitsMetrics(Metric):
    """Fréchet distance and KID on the digits classifier's features, and the classes covered."""

    name = "digits"
    score_key = "digits_fd"
    description = (
        "Digits classifier: FD and KID (feature units²), classes covered, class reverse KL."
    )

    def applies(self, data: EvalData) -> bool:
        return data.is_image and data.digits

    def floor_sample(self, data: EvalData):
        """The held-out test digits: the reference is every training digit (:meth:`compute`)."""
        from lipgan.metrics import images

        test, _ = images.real_digits("test")
        train = len(images.real_digits("train")[0])
        return test, f"the {len(test):,} held-out test digits against all {train:,} training digits"

    def compute(self, data: EvalData) -> dict:
        from lipgan.metrics import images

        classifier = images.digits_classifier(data.data_dir)
        real_digits, _ = images.real_digits("train")
        a = images.digits_features(real_digits, classifier)
        b = images.digits_features(data.fake, classifier)
        return {
            "digits_fd": images.frechet_distance(a, b),
            "digits_kid": images.kid(a, b, num_subsets=20)[0],
            **images.class_metrics(data.fake, classifier),
        }


class KerasInception(Metric):
    """FD and KID on Keras' InceptionV3 pool features (not FID's network: docs/metrics.md)."""

    name = "keras_inception"
    score_key = "inception_v3_fd"
    description = "FD/KID on Keras' InceptionV3 from a local weights file (images)."

    def applies(self, data: EvalData) -> bool:
        return data.is_image and bool(data.inception_weights)

    def compute(self, data: EvalData) -> dict:
        from lipgan.metrics import images

        model = images.load_inception(data.inception_weights)
        a = images.inception_features(data.real, model)
        b = images.inception_features(data.fake, model)
        # Not FID: Keras' InceptionV3 is not FID's network (docs/metrics.md), so not its name.
        return {
            "inception_v3_fd": images.frechet_distance(a, b),
            "inception_v3_kid": images.kid(a, b, num_subsets=20)[0],
        }


def inception(data: EvalData) -> dict:
    """FID's network (the 2015 Inception graph) on the evaluation's real and fake images, once
    per evaluation: ``{"real": pool3, "fake": pool3, "fake_logits": logits}``."""

    def compute():
        from lipgan.metrics.inception import inception_features

        real, _ = inception_features(data.real)
        fake, logits = inception_features(data.fake)
        return {"real": real, "fake": fake, "fake_logits": logits}

    return data.shared("inception_2015", compute)


class InceptionMetric(Metric):
    """Base of the scores on FID's own network: images only, chosen by name (the network is a
    95 MB download and ~11 GFLOP per image)."""

    default = False

    def applies(self, data: EvalData) -> bool:
        return data.is_image

    def check_ready(self) -> None:
        """The graph's file is here, in the cache, or downloadable now (downloaded if so): else
        :class:`lipgan.metrics.weights.WeightsError`, one line naming the file and where to put
        it (:func:`lipgan.metrics.weights.weights_path`)."""
        from lipgan.metrics import inception

        inception.weights_path()


class Fid(InceptionMetric):
    """FID (Heusel et al. 2017) on the 2015 Inception graph's pool3, as TTUR and the papers."""

    name = "fid"
    score_key = "fid"
    description = "FID on FID's own 2015 Inception network (images; lower is better)."

    def compute(self, data: EvalData) -> dict:
        from lipgan.metrics.image_scores import fid

        features = inception(data)
        return {"fid": fid(features["real"], features["fake"])}


class InceptionScore(InceptionMetric):
    """Inception Score (Salimans et al. 2016), 10 splits, on the graph's 1008 logits."""

    name = "is"
    description = "Inception Score, 10 splits, mean and std (images; higher is better)."

    def compute(self, data: EvalData) -> dict:
        from lipgan.metrics.image_scores import inception_score

        mean, std = inception_score(inception(data)["fake_logits"], splits=10)
        return {"inception_score": mean, "inception_score_std": std}


class Kid(InceptionMetric):
    """KID (Bińkowski et al. 2018) with torch-fidelity's subsets, on the graph's pool3."""

    name = "kid"
    score_key = "kid_inception"
    description = "KID, torch-fidelity's subsets, mean and std (images; lower is better)."

    def compute(self, data: EvalData) -> dict:
        from lipgan.metrics.image_scores import kid

        features = inception(data)
        size = min(1000, len(features["real"]), len(features["fake"]))
        mean, std = kid(features["real"], features["fake"], subset_size=size, seed=data.seed)
        return {"kid_inception": mean, "kid_inception_std": std}


class Prdc(InceptionMetric):
    """Precision, recall, density, coverage (Naeem et al. 2020), k = 5, on the graph's pool3."""

    name = "prdc"
    description = "Precision, recall, density, coverage, k = 5 (images)."

    def compute(self, data: EvalData) -> dict:
        from lipgan.metrics.image_scores import prdc

        features = inception(data)
        return prdc(features["real"], features["fake"], k=5)


@hookimpl
def lipgan_register_metrics(register):
    for cls in (
        CriticWasserstein,
        ToyMetrics,
        DataW1,
        DigitsMetrics,
        KerasInception,
        Fid,
        InceptionScore,
        Kid,
        Prdc,
    ):
        register(cls)
