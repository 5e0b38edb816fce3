#!/usr/bin/env bash
# The README's GPU figures in one run that fits a short loan of a GPU, every step stopped at its share of
# the time given and resumable where it stopped (run it again on a later loan):
#
#   benchmarks/gpu_figures.sh LOG_DIR [SECONDS]        # SECONDS: 480 unless given
#
# 1. cache_bench: a verify pass's cost against its length, in a bare loop (about a minute);
# 2. fastapply bench of fastapply-small on the bench file, every method but the draft model and the
#    Medusa heads, --resume (benchmarks/results/gpu-$GPU-fastapply-small-r16b-bf16.json);
# 3. the same of a random Llama of the 1b shape with replayed acceptance, built at /tmp/llama-1b (the
#    path its JSON records), --resume (benchmarks/results/gpu-$GPU-1b-replay-bf16.json).
#
# The machine needs no network: fastapply's base (the GGUF `fastapply model download` fetches) must be in
# $FASTAPPLY_CACHE_DIR/base and the `gguf` package importable; the script stops at once, saying so,
# where either is missing. Logs and a copy of each JSON go to LOG_DIR.
# DEVICE (cuda), DTYPE (bfloat16), GPU (h200) and RESULTS (benchmarks/results) change what it runs and
# where it writes.
set -u
log=${1:?usage: benchmarks/gpu_figures.sh LOG_DIR [SECONDS]}
budget=${2:-480}
device=${DEVICE:-cuda}
dtype=${DTYPE:-bfloat16}
gpu=${GPU:-h200}
results=${RESULTS:-benchmarks/results}
cd "$(dirname "$0")/.." || exit 1
mkdir -p "$log" "$results"
export PYTHONUNBUFFERED=1 HF_HUB_OFFLINE=1
started=$(date +%s)
left() { echo $((budget - ($(date +%s) - started))); }

python3 -m fastapply --help > /dev/null || { echo "gpu_figures: python3 -m fastapply does not run here" >&2; exit 2; }
python3 -c "import gguf" 2>/dev/null || { echo "gpu_figures: the gguf package is not importable" >&2; exit 2; }
python3 -c "from fastapply.basemodel import base_dir, BASE; import sys; \
sys.exit(not (base_dir() / BASE.gguf_name).exists())" \
    || { echo "gpu_figures: no base GGUF in \$FASTAPPLY_CACHE_DIR/base (fastapply model download)" >&2; exit 2; }

timeout 90 python3 benchmarks/cache_bench.py --device "$device" --dtype "$dtype" > "$log/cache_bench.log" 2>&1
cp -f "$results"/cache-*.json "$log/" 2>/dev/null

small="$results/gpu-$gpu-fastapply-small-r16b-$( [ "$dtype" = bfloat16 ] && echo bf16 || echo "$dtype").json"
share=$(( $(left) * 6 / 10 ))
[ "$share" -gt 30 ] && timeout "$share" python3 -m fastapply bench --tasks evals/tasks/bench.jsonl.gz --device "$device" \
    --dtype "$dtype" --methods plain,prompt-lookup,ngram,fastapply --out "$small" --resume > "$log/small.log" 2>&1
cp -f "$small" "$log/" 2>/dev/null

big="$results/gpu-$gpu-1b-replay-$( [ "$dtype" = bfloat16 ] && echo bf16 || echo "$dtype").json"
[ -d /tmp/llama-1b ] || timeout 120 python3 -m finetune.scratch --out /tmp/llama-1b --shape 1b \
    --tokenizer fastapply/models/fastapply-small --dtype "$dtype" > "$log/scratch.log" 2>&1
share=$(( $(left) - 10 ))
[ "$share" -gt 30 ] && timeout "$share" python3 -m fastapply bench --model /tmp/llama-1b --acceptance replay \
    --tasks evals/tasks/bench.jsonl.gz --device "$device" --dtype "$dtype" \
    --methods plain,prompt-lookup,ngram,fastapply --out "$big" --resume > "$log/big.log" 2>&1
cp -f "$big" "$log/" 2>/dev/null
tail -n 3 "$log"/*.log
