#!/usr/bin/env sh
# The intervention behind the EMA sentence (issue #41 item 4): "the EMA lowers high quality on the
# grid; lag behind still-improving weights or averaging weights (which is not averaging samples)?".
# Gradient penalty on the grid at its tuned config (studies/tuned/chosen.json: the row whose EMA
# cost the most, 24 points), every run keeping three EMAs of the same training (decays 0.999, 0.99
# and 0.9999: mean lags of about 1,000, 100 and 10,000 iterations), 5 seeds each:
#   4k/  the tuned budget, 4,000 iterations, EMAs from iteration 1,000 (the tuned study's setting;
#        seeds 0-4 are the tuned study's, so its raw and 0.999 curves come back bit for bit);
#   8k/  twice the budget, 8,000 iterations with both learning-rate schedules stretched to it, EMAs
#        from iteration 1,000 and, as a second row, from iteration 4,000.
# Predictions (docs/study.md, "The EMA: lag or averaging"): if lag explains the loss, the gap
# shrinks with the decay's lag (0.99 about none), shrinks where the raw curve flattens (8,000),
# and the EMA at t matches the raw generator about one lag earlier; if averaging weights costs
# quality by itself, the gap stays at 0.99 and at 8,000.
# Re-running the same command resumes.
set -eu
. studies/snapshot.sh  # TF_CPP_MIN_LOG_LEVEL, and LIPGAN_TREE (a snapshot of the code)
gp_grid() {  # studies/tuned/chosen.json's gradient_penalty, grid (trial config), and three EMAs
  nice -n 15 lipgan study --dataset grid --seeds 5 \
    --bind 'train.n_critic = 5' \
    --bind 'critic/linear_decay.initial_learning_rate = 0.002424364641286451' \
    --bind 'generator/linear_decay.initial_learning_rate = 0.002424364641286451' \
    --bind 'critic/Adam.beta_1 = 0.5947323250338562' --bind 'critic/Adam.beta_2 = 0.999' \
    --bind 'generator/Adam.beta_1 = 0.5947323250338562' --bind 'generator/Adam.beta_2 = 0.999' \
    --bind 'gradient_penalty.weight = 0.2775425657803799' \
    --bind 'train.ema_decay = (0.999, 0.99, 0.9999)' "$@"
}
# The start is a row binding (a row's own bindings come before --bind's, which would override them).
gp_grid --steps 4000 --constraint 'gradient_penalty:train.ema_start=1000' \
  --bind 'critic/linear_decay.decay_steps = 20000' \
  --bind 'generator/linear_decay.decay_steps = 4000' \
  --out studies/intervention-ema/4k
gp_grid --steps 8000 --constraint 'gradient_penalty:train.ema_start=1000' \
  --constraint 'gradient_penalty:train.ema_start=4000' \
  --bind 'critic/linear_decay.decay_steps = 40000' \
  --bind 'generator/linear_decay.decay_steps = 8000' \
  --out studies/intervention-ema/8k
