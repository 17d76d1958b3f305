#!/usr/bin/env sh
# Spectral norm with a MaxMin critic (docs/study.md, "Tuned"): the tuned study's protocol for one
# more row. Spectral norm with the ReLU critic fails the grid at every config tried; Anil et al.
# 2019 ("Sorting out Lipschitz function approximation", Sec. 3) show that norm-constrained ReLU
# networks lose gradient norm and cannot express the optimal WGAN critic, and that MaxMin keeps
# the gradient norm. Same ranges, search budget, seeds and EMA as studies/tuned; re-running the
# same command resumes.
set -eu
export TF_CPP_MIN_LOG_LEVEL=3
exec nice -n 10 lipgan tune \
  --constraint spectral_norm:mlp_critic.activation=maxmin,dcgan_critic.activation=maxmin \
  --configs 20 --search-steps 1000 --seeds 5 --executor tune --out studies/tuned-sn-maxmin "$@"
