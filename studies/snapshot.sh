# Sourced by the studies' run.sh (`. studies/snapshot.sh`, from the repository root): quiet
# TensorFlow, and LIPGAN_TREE=/path/to/a/checkout runs that tree's code (a snapshot, so that editing
# the work tree does not change the code of runs still to start): its lipgan and its built-in
# plugins (lipgan_plugins) first on the path.
# A run.sh whose rows mean what an older default meant sets needs_snapshot (why, and which checkout)
# before sourcing this: without LIPGAN_TREE it stops rather than train today's default in them.
export TF_CPP_MIN_LOG_LEVEL=3
if [ -z "${LIPGAN_TREE:-}" ] && [ -n "${needs_snapshot:-}" ]; then
  echo "error: $needs_snapshot" >&2
  exit 2
fi
if [ -n "${LIPGAN_TREE:-}" ]; then
  shim=$(mktemp -d) && ln -s "$LIPGAN_TREE/plugins" "$shim/lipgan_plugins"
  export PYTHONPATH="$LIPGAN_TREE:$shim"
fi
