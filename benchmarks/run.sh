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
# XLA is refused there, see lipgan/core/jit.py); keras-io WGAN-GP as users run it (compile defaults) and
# with jit_compile=True (the function and xla rows of the keras_io_gp constraint).
set -e
OUT=${LIPGAN_BENCH_OUT:-benchmarks}
EXTRA=""
if [ -n "$LIPGAN_BENCH_TINY" ]; then
  OUT=${LIPGAN_BENCH_OUT:-/tmp/lipgan-bench-tiny}
  EXTRA="--repetitions 1 --min-rep-seconds 0.01 --batch toy=16 --batch dcgan=8 --n-critic 2"
fi
mkdir -p "$OUT"
# bf16 rows everywhere only on CPUs with native bf16 (avx512_bf16 / AMX); elsewhere one small pair of
# rows shows what emulated bf16 costs.
if grep -qE 'avx512_bf16|amx_bf16' /proc/cpuinfo 2>/dev/null; then
  TOY_MODES="--mode function --mode xla --mode function+bf16 --mode xla+bf16"
else
  TOY_MODES="--mode function --mode xla"
fi
LOAD=$(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null || echo unknown)
# Every built-in constraint; gradient_penalty:fast_relu=False is the unpruned reference (the default
# 'auto' prunes wherever exact) and gradient_penalty:every=16 the lazy schedule.
BUILTIN="--constraint none --constraint weight_clip --constraint spectral_norm --constraint gradient_penalty"
BUILTIN="$BUILTIN --constraint gradient_penalty:fast_relu=False --constraint gradient_penalty:every=16"
BUILTIN="$BUILTIN --constraint lipschitz_penalty --constraint r1 --constraint dragan --constraint aol"
ALL="$BUILTIN"
CONV="$BUILTIN"
GP="--constraint none --constraint gradient_penalty --constraint gradient_penalty:fast_relu=False"
# shellcheck disable=SC2086  # word splitting of the option lists is intended
{
# toy MLP, batch 256: everything, tf.function / XLA / bf16, with keras-io in both forms.
lipgan bench --model toy $TOY_MODES --steps-per-execution 5 $ALL $EXTRA --out "$OUT/toy"
# toy MLP on two logical CPUs (replica counts are exact; XLA is not available there).
lipgan bench --model toy --strategy mirrored:logical_cpus=2 --mode function \
  --steps-per-execution 5 --no-keras-io $ALL $EXTRA --out "$OUT/toy_mirrored"
# DCGAN 32x32, batch 64: penalty and critic step for every constraint, tf.function and XLA.
lipgan bench --model dcgan --mode function --mode xla --measure penalty --measure critic_step \
  $CONV $EXTRA --out "$OUT/dcgan_step"
# DCGAN full iterations (n_critic critic updates + 1 generator update) against keras-io (both forms).
lipgan bench --model dcgan --mode function --mode xla --measure iteration --steps-per-execution 1 \
  $GP $EXTRA --out "$OUT/dcgan_iteration"
# Certified constructions against none, GP and SN: critic steps only. bjorck is
# the default (one projection step per update), iterations=20,projection=0 the scheme before issue 26
# (20 iterations in every forward pass, gradients through them; ~25x the plain step).
lipgan bench --model toy --mode function --mode xla --measure critic_step --steps-per-execution 1 \
  --no-keras-io --constraint none --constraint gradient_penalty --constraint spectral_norm \
  --constraint aol --constraint bjorck --constraint bjorck:projection=2 \
  --constraint bjorck:iterations=20,projection=0 --constraint bjorck:iterations=5,projection=0 \
  $EXTRA --out "$OUT/certified"
# The DCGAN critic's two certified options, AOL and Björck (BCOP orthogonal convolutions), against
# none and GP: critic steps in the default mode.
lipgan bench --model dcgan --measure critic_step --repetitions 9 --no-keras-io --constraint none \
  --constraint gradient_penalty --constraint aol --constraint bjorck $EXTRA --out "$OUT/dcgan_bjorck"
# AOC's orthogonal convolutions against BCOP's (bjorck) and the plain critic, interleaved.
lipgan bench --model dcgan --measure critic_step --constraint none --constraint bjorck \
  --constraint aoc --mode function --no-keras-io --repetitions 9 $EXTRA --out "$OUT/dcgan_aoc"
# Every certified layer against the plain critic and GP, toy and DCGAN, interleaved (issue #39).
lipgan bench --model toy --model dcgan --constraint none --constraint gradient_penalty \
  --constraint bjorck --constraint aol --constraint aoc --constraint sll --constraint cpl \
  --constraint cayley --constraint soc --mode function --measure critic_step --repetitions 5 \
  --no-keras-io $EXTRA --out "$OUT/certified_layers"
# bf16 critic steps, toy and DCGAN: none and GP (all rows on native-bf16 CPUs are in the toy run).
lipgan bench --model toy --model dcgan --mode function+bf16 --mode xla+bf16 --measure critic_step \
  --no-keras-io --constraint none --constraint gradient_penalty $EXTRA --out "$OUT/bf16"
if [ -z "$LIPGAN_BENCH_TRIM" ]; then
  # DCGAN on two logical CPUs.
  lipgan bench --model dcgan --strategy mirrored:logical_cpus=2 --mode function \
    --measure critic_step --measure iteration --steps-per-execution 1 --no-keras-io \
    --constraint none --constraint gradient_penalty $EXTRA --out "$OUT/dcgan_mirrored"
fi
}
if [ -z "$LIPGAN_BENCH_TINY" ] && [ "$OUT" = benchmarks ]; then
  echo "Load average when the sweep started: $LOAD." > benchmarks/sweep.txt
  python benchmarks/make_results.py
else
  echo "tiny/other run: results in $OUT; RESULTS.md not rewritten (load at start: $LOAD)"
fi
