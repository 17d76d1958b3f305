#!/bin/sh
# ONE command regenerates benchmarks/RESULTS.md (run from the repository root, on idle cores):
#     sh benchmarks/run.sh
# Environment:
#   LIPGAN_BENCH_TINY=1   verify the script's logic in a minute or two: tiny batches, one short
#                         repetition, results under $LIPGAN_BENCH_OUT (default /tmp/lipgan-bench-tiny),
#                         RESULTS.md is not touched.
#   LIPGAN_BENCH_TRIM=1   the trimmed sweep: no bf16 rows for DCGAN and no mirrored DCGAN rows.
#   LIPGAN_BENCH_OUT=DIR  where the run folders go (default: benchmarks).
# Sweep: toy and DCGAN; penalty, critic step and full iteration; every built-in constraint plus
# gradient_penalty:fast_relu=True and the lazy gradient_penalty:every=16; tf.function and XLA (and
# bf16 on CPUs with native bf16); default strategy and mirrored:logical_cpus=2 (tf.function only:
# XLA is refused there, see lipgan/jit.py); keras-io WGAN-GP as users run it (compile defaults) and
# with jit_compile=True (the function and xla rows of the keras_io_gp constraint).
set -e
OUT=${LIPGAN_BENCH_OUT:-benchmarks}
EXTRA=""
if [ -n "$LIPGAN_BENCH_TINY" ]; then
  OUT=${LIPGAN_BENCH_OUT:-/tmp/lipgan-bench-tiny}
  EXTRA="--repetitions 1 --min-rep-seconds 0.01 --batch toy=16 --batch dcgan=8 --n-critic 2"
fi
mkdir -p "$OUT"
LOAD=$(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null || echo unknown)
ALL="--constraint none --constraint weight_clip --constraint spectral_norm --constraint gradient_penalty"
ALL="$ALL --constraint gradient_penalty:fast_relu=True --constraint gradient_penalty:every=16"
GP="--constraint none --constraint gradient_penalty --constraint gradient_penalty:fast_relu=True"
# shellcheck disable=SC2086  # word splitting of the option lists is intended
{
# toy MLP, batch 256: everything, tf.function / XLA / bf16, with keras-io in both forms.
lipgan bench --model toy --mode function --mode xla --mode function+bf16 --mode xla+bf16 \
  --steps-per-execution 5 $ALL $EXTRA --out "$OUT/toy"
# toy MLP on two logical CPUs (replica counts are exact; XLA is not available there).
lipgan bench --model toy --strategy mirrored:logical_cpus=2 --mode function \
  --steps-per-execution 5 --no-keras-io $ALL $EXTRA --out "$OUT/toy_mirrored"
# DCGAN 32x32, batch 64: penalty and critic step for every constraint, tf.function and XLA.
lipgan bench --model dcgan --mode function --mode xla --measure penalty --measure critic_step \
  $ALL $EXTRA --out "$OUT/dcgan_step"
# DCGAN full iterations (n_critic critic updates + 1 generator update) against keras-io (both forms).
lipgan bench --model dcgan --mode function --mode xla --measure iteration --steps-per-execution 1 \
  $GP $EXTRA --out "$OUT/dcgan_iteration"
if [ -z "$LIPGAN_BENCH_TRIM" ]; then
  # DCGAN critic step in bf16 (native bf16 CPUs), and on two logical CPUs.
  lipgan bench --model dcgan --mode function+bf16 --mode xla+bf16 --measure critic_step \
    --constraint none --constraint gradient_penalty $EXTRA --out "$OUT/dcgan_bf16"
  lipgan bench --model dcgan --strategy mirrored:logical_cpus=2 --mode function \
    --measure critic_step --measure iteration --steps-per-execution 1 --no-keras-io \
    --constraint none --constraint gradient_penalty $EXTRA --out "$OUT/dcgan_mirrored"
fi
}
if [ -z "$LIPGAN_BENCH_TINY" ] && [ "$OUT" = benchmarks ]; then
  LIPGAN_BENCH_NOTE="Load average when the sweep started: $LOAD." python benchmarks/make_results.py
else
  echo "tiny/other run: results in $OUT; RESULTS.md not rewritten (load at start: $LOAD)"
fi
