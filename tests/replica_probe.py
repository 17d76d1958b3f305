"""Run the engine on one replica layout and print its numbers as JSON (one process per layout).

    python tests/replica_probe.py default|mirrored:N  [constraint[:key=value,...] ...]

TensorFlow fixes its logical devices at start-up, so each replica count needs its own process.
For every constraint it reports (a) the all-reduced critic loss and gradients of one critic step on a
fixed global batch and (b) metrics and final weights after several full iterations (n_critic critic
updates + one generator update each). Plain SGD is used for (b): Adam divides by √v, which turns
float reduction-order noise in near-zero gradient components into full-size steps of either sign.
For gradient_penalty on several replicas it also reports the gradient norm a per-replica mean would
apply.
"""

import json
import sys

LAYOUT = sys.argv[1]
CONSTRAINTS = sys.argv[2:] or ["none", "gradient_penalty", "weight_clip", "spectral_norm"]
GLOBAL_BATCH, N_CRITIC, ITERATIONS = 8, 2, 4
#: The one constraint whose gradients are also taken with a per-replica mean (the mistake).
PER_REPLICA_MEAN_SPEC = "gradient_penalty"


def make_strategy():
    if LAYOUT == "default":
        import tensorflow as tf

        return tf.distribute.get_strategy()
    if LAYOUT == "multi_worker":  # TF_CONFIG set by the caller, one process per worker
        from lipgan_plugins.multi_worker import MultiWorker

        return MultiWorker(timeout_seconds=120).create()
    from lipgan_plugins.mirrored import Mirrored

    return Mirrored(logical_cpus=int(LAYOUT.split(":")[1])).create()


STRATEGY = make_strategy()  # before any other TF work

import keras  # noqa: E402
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

from lipgan.core.engine import WGAN  # noqa: E402
from lipgan.core.plugins import load_registry  # noqa: E402
from lipgan.core.step_config import StepConfig  # noqa: E402
from lipgan.models import mlp_critic, mlp_generator  # noqa: E402

SETTINGS = {
    "none": {},
    "gradient_penalty": {"weight": 10.0},
    "weight_clip": {"c": 0.05},
    "spectral_norm": {"power_iterations": 1},
}


class PerReplicaMean(WGAN):
    """The common mistake: average each replica's loss over its *own* batch."""

    def average(self, per_example):
        return tf.reduce_mean(per_example)


def parse_spec(spec):
    """``gradient_penalty:every=2,weight=5.0`` -> (name, kwargs over SETTINGS[name])."""
    import ast

    name, _, args = spec.partition(":")
    kwargs = dict(SETTINGS.get(name, {}))
    for item in filter(None, args.split(",")):
        key, _, value = item.partition("=")
        try:
            kwargs[key] = ast.literal_eval(value)
        except (ValueError, SyntaxError):
            kwargs[key] = value
    return name, kwargs


def build(spec, engine=WGAN):
    keras.utils.set_random_seed(0)
    name, kwargs = parse_spec(spec)
    cls = load_registry().registry.get("constraint", name)
    return engine(
        STRATEGY,
        critic=lambda s: mlp_critic(s, width=32, depth=3),
        generator=lambda s: mlp_generator(s, latent_dim=2, width=32, depth=2),
        critic_optimizer=lambda: keras.optimizers.SGD(0.05),
        generator_optimizer=lambda: keras.optimizers.SGD(0.05),
        constraint=cls(**kwargs),
        data_shape=(2,),
        # Replica invariance, not XLA (test_distributed compares XLA with tf.function): 'auto'
        # would XLA-compile the one-replica layout only.
        # Generator EMA on (it changes no update): its copies must agree across replicas too.
        config=StepConfig(
            global_batch_size=GLOBAL_BATCH,
            n_critic=N_CRITIC,
            seed=7,
            jit_compile=False,
            ema_decay=0.5,
            ema_start=1,
        ),
    )


def main():
    data = np.random.default_rng(0).normal(size=(64, 2)).astype(np.float32)
    out = {"layout": LAYOUT, "replicas": STRATEGY.num_replicas_in_sync, "results": {}}
    for name in CONSTRAINTS:
        wgan = build(name)
        grads, loss = wgan.critic_gradients(tf.constant(data[:GLOBAL_BATCH]), step=3, phase=1)
        ds = (
            tf.data.Dataset.from_tensor_slices(data)
            .batch(GLOBAL_BATCH, drop_remainder=True)
            .repeat()
        )
        metrics = wgan.iterate(wgan.distribute(ds), ITERATIONS)
        out["results"][name] = {
            "critic_loss": float(loss),
            "grad_norm": float(tf.linalg.global_norm(grads)),
            "critic_grads": [g.numpy().tolist() for g in grads],
            "metrics": {k: float(v) for k, v in metrics.items()},
            "critic_weights": [v.numpy().tolist() for v in wgan.critic.trainable_variables],
            "generator_weights": [v.numpy().tolist() for v in wgan.generator.trainable_variables],
            "non_trainable": [v.numpy().tolist() for v in wgan.critic.non_trainable_variables],
            "generator_ema": [v.numpy().tolist() for v in wgan.generator_ema.weights],
            "drift": wgan.replica_drift()[0],
        }
        # One constraint shows the mistake (a trace costs seconds), where it can show: on one
        # replica the per-replica mean is the global mean.
        if name == PER_REPLICA_MEAN_SPEC and STRATEGY.num_replicas_in_sync > 1:
            naive_grads, _ = build(name, PerReplicaMean).critic_gradients(
                tf.constant(data[:GLOBAL_BATCH]), step=3, phase=1
            )
            out["results"][name]["per_replica_mean_grad_norm"] = float(
                tf.linalg.global_norm(naive_grads)
            )
    print("RESULT " + json.dumps(out), flush=True)


if __name__ == "__main__":
    main()
    # Skip interpreter teardown: a multi-worker gRPC server can keep a finished process alive.
    import os

    os._exit(0)
