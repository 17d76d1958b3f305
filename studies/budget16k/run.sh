#!/usr/bin/env sh
# The iterations each needs (issue #41's fallback target): no row is at PacGAN4's means with the
# lower end of its 95 % interval at or above them within 4,000 iterations (docs/study.md, "What
# the results say"), so the nearest row of each data set trains to 16,000 iterations, 10 seeds,
# at its tuned config (studies/tuned/chosen.json, the bindings of lipgan.study.search.bindings for
# 16,000 steps: both learning-rate decays stretched to the budget), with the three EMAs of the
# tuned study's decay choice kept from the same training (0.999, 0.99, 0.9999, from iteration
# 1,000). Its quality curve (every 250 iterations) gives, per generator, the first iteration where
# the row's seeds reach PacGAN4's means on all three metrics with the interval's lower end: on this
# 16,000-iteration schedule, whose rate at iteration t is not a t-iteration run's.
#   ring/  AOL + MaxMin (the ring's nearest: 95.8 % [95.4, 96.1] with EMA at 4,000);
#   grid/  gradient penalty (92.3 % [90.0, 93.8] at 8,000 iterations, studies/intervention-ema/8k).
# Cost: 27.6 and 21.7 ms per iteration on the bench (studies/tuned/bench.json), 10 x 16,000
# iterations per row: 2.2 h of one core at those rates, about 2 h of 2 idle cores in all with
# two cells at a time (each then slower) and the curves.
# Re-running the same command resumes.
set -eu
. studies/snapshot.sh  # TF_CPP_MIN_LOG_LEVEL, and LIPGAN_TREE (a snapshot of the code)
long() {  # a study of 10 seeds at 16,000 iterations with three EMAs from iteration 1,000
  nice -n 15 lipgan study --seeds 10 --steps 16000 --eval-every 250 \
    --bind 'train.n_critic = 5' \
    --bind 'critic/linear_decay.decay_steps = 80000' \
    --bind 'generator/linear_decay.decay_steps = 16000' \
    --bind 'train.ema_decay = (0.999, 0.99, 0.9999)' --bind 'train.ema_start = 1000' "$@"
}
long --dataset ring \
  --constraint 'aol:mlp_critic.activation=maxmin,dcgan_critic.activation=maxmin' \
  --bind 'critic/linear_decay.initial_learning_rate = 0.0011911224544654164' \
  --bind 'generator/linear_decay.initial_learning_rate = 0.0011911224544654164' \
  --bind 'critic/Adam.beta_1 = 0.34659219356679616' --bind 'critic/Adam.beta_2 = 0.999' \
  --bind 'generator/Adam.beta_1 = 0.34659219356679616' --bind 'generator/Adam.beta_2 = 0.999' \
  --out studies/budget16k/ring
long --dataset grid --constraint gradient_penalty \
  --bind 'critic/linear_decay.initial_learning_rate = 0.002424364641286451' \
  --bind 'generator/linear_decay.initial_learning_rate = 0.002424364641286451' \
  --bind 'critic/Adam.beta_1 = 0.5947323250338562' --bind 'critic/Adam.beta_2 = 0.999' \
  --bind 'generator/Adam.beta_1 = 0.5947323250338562' --bind 'generator/Adam.beta_2 = 0.999' \
  --bind 'gradient_penalty.weight = 0.2775425657803799' \
  --out studies/budget16k/grid
