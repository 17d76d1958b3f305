#!/usr/bin/env sh
# The CIFAR-10 study (docs/study.md, "Image data sets"): the gradient penalty, spectral norm, AOL
# and Björck on mimicry's CIFAR-10 setting, the anchors' (gin/wgangp_cifar10.gin; gin/sngan_cifar10.gin
# is the same config with spectral_norm, power_iterations 1): the ResNet critic (128) and generator
# (256), batch 64, 5 critic steps, 100K iterations, Adam(2e-4, 0.0, 0.9) falling linearly to 0.
# Every constraint runs that one config. Each row is scored as the anchors score (mimicry's README:
# WGAN-GP IS 7.33 / FID 22.29, SNGAN IS 7.97 / FID 16.77): FID, IS, KID and PRDC on FID's own 2015
# Inception network, 50,000 samples against the training set, with the real-vs-real floor and
# uniform noise scored the same way beside them. AOL and Björck run on the ResNet's ReLU
# (resnet_critic has no activation setting; their papers train MaxMin critics).
# Needs a GPU (100K iterations x 4 constraints x 3 seeds), TFDS's cifar10 prepared in TFDS_DATA_DIR
# (`tfds build cifar10` where there is network) and the Inception graph (downloaded into the cache
# on first use, or LIPGAN_INCEPTION_GRAPH=classify_image_graph_def.pb): without it the study stops
# in one line, before training, naming the file and where to put it. Re-running resumes.
#   sh studies/cifar10/run.sh           the study, into studies/cifar10
#   sh studies/cifar10/run.sh --smoke   the same path in minutes on a CPU, never results: 200
#                                       iterations of width-8 ResNets at batch 16 on lipgan_shapes
#                                       (a CIFAR-shaped set generated locally), 2,000 samples scored
# Options after these (e.g. --jobs 1, --executor ray) go to `lipgan study`.
set -eu
export TF_CPP_MIN_LOG_LEVEL=3
CONSTRAINTS="--constraint gradient_penalty --constraint spectral_norm:power_iterations=1
  --constraint aol --constraint bjorck"
if [ "${1:-}" = "--smoke" ]; then
  shift
  # shellcheck disable=SC2086
  exec nice -n 10 lipgan study --quick --dataset cifar10 $CONSTRAINTS --seeds 1 --steps 200 \
    --eval-samples 2000 --bind "dataset.name='lipgan_shapes'" --bind resnet_critic.dim=8 \
    --bind resnet_generator.dim=8 --bind train.global_batch_size=16 \
    --out studies/cifar10/smoke "$@"
fi
# shellcheck disable=SC2086
exec lipgan study --dataset cifar10 $CONSTRAINTS --seeds 3 --eval-samples 50000 \
  --out studies/cifar10 "$@"
