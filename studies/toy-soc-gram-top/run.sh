#!/usr/bin/env sh
# SOC's Gram scale trained with the gradient of sigma alone (soc.bound='gram_top': the same layer
# as 'gram', bit for bit, with a cheaper backward pass) on ring and grid, at studies/toy-soc-gram's
# protocol (the MLP critic with MaxMin, each data set's shipped config, 4,000 iterations, the same
# 3 seeds). Its 'gram' rows are the comparison: that code path is unchanged since their snapshot
# (2d75d86). Does the cheaper gradient learn as well? Code: snapshot 6084ca1 or later (the option; 988c573's form compiled pathologically under XLA).
# Re-running the same command resumes.
#   LIPGAN_TREE=/path/to/a/checkout runs that tree's code (a snapshot, so that editing the work
#   tree does not change the code of runs still to start).
set -eu
. studies/snapshot.sh  # TF_CPP_MIN_LOG_LEVEL, and LIPGAN_TREE (a snapshot of the code)
maxmin=mlp_critic.activation=maxmin
exec nice -n 10 lipgan study --dataset ring --dataset grid --seeds 3 \
  --constraint "soc:bound=gram_top,$maxmin" \
  --out studies/toy-soc-gram-top "$@"
