#!/usr/bin/env sh
# The digits study with today's certified layers (issue #39 item 4): the protocol of
# studies/digits (digits, 5 seeds, 800 iterations, 2,500 samples per evaluation, the digits
# classifier's FD/KID and class coverage), on today's code, every constraint of studies/digits
# again (so the rows are comparable run for run) plus SLL, CPL, Cayley, SOC, AOC and Björck in
# their convolutional forms on the DCGAN critic, each with MaxMin (the certified layers' usual
# gradient-norm-preserving activation) and AOL with MaxMin beside the plain AOL row.
# Re-running the same command resumes.
#   LIPGAN_TREE=/path/to/a/checkout runs that tree's code (a snapshot, so that editing the work
#   tree does not change the code of runs still to start).
set -eu
needs_snapshot="its soc rows are Hoelder's scale, soc's default before 2026-12-07: set LIPGAN_TREE to a checkout of a commit before that change"
. studies/snapshot.sh  # TF_CPP_MIN_LOG_LEVEL, and LIPGAN_TREE (a snapshot of the code)
maxmin=dcgan_critic.activation=maxmin
exec nice -n 15 lipgan study --dataset digits --seeds 5 --steps 800 \
  --constraint weight_clip --constraint gradient_penalty --constraint lipschitz_penalty \
  --constraint spectral_norm --constraint r1 --constraint dragan --constraint aol \
  --constraint "aol:$maxmin" --constraint "bjorck:$maxmin" --constraint "sll:$maxmin" \
  --constraint "cpl:$maxmin" --constraint "cayley:$maxmin" --constraint "soc:$maxmin" \
  --constraint "aoc:$maxmin" \
  --out studies/digits-certified "$@"
