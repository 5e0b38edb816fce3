#!/usr/bin/env bash
# Train fastapply-small from scratch, release and measure it: the recipe of finetune/README.md in three
# stages, each sized to fit one 10-minute command on a lent GPU machine.
#
#   finetune/fastapply-small.sh pretrain   corpus of the machine's own packages -> tokenizer -> token
#                                          files -> pretraining (stops after $PRETRAIN_MINUTES, saved)
#   finetune/fastapply-small.sh finetune   pretraining resumed for $RESUME_MINUTES more -> full
#                                          fine-tuning on $APPLY_DATA -> release in models/fastapply-small
#   finetune/fastapply-small.sh eval       the release on the suite (fastapply policy), against plain
#                                          decoding and prompt lookup on the first $PEER_LIMIT tasks
#
# Inputs: $APPLY_DATA (default runs/small/apply-train.jsonl.gz), made where tree-sitter is installed:
#   python -m data.build_train --corpus runs/corpus --out runs/train-corpus --max-examples 30000 --transforms-per-file 6
#   cat data/train/train.jsonl.gz runs/train-corpus/train.jsonl.gz > runs/small/apply-train.jsonl.gz
# Everything lands in runs/small/. With $OUT set (the device machine), each stage leaves what must come
# back in $OUT, in parts of at most 15 MB: "finetune" the release (cat release.tar.* | tar x), "eval" the
# eval runs (cat evals.tar.* | tar x). Each eval run stops after $EVAL_SECONDS, so that a model that
# drafts badly cannot use up the command's time before its results are packed.
# The sizes below are the GPU run's; CPU smoke runs shrink them with the same variables.
set -euo pipefail
cd "$(dirname "$0")/.."

PY=${PYTHON:-python3}
RUN=${RUN:-runs/small}
SHAPE=${SHAPE:-fastapply-small}
VOCAB=${VOCAB:-8192}
CONTEXT=${CONTEXT:-8192}
BATCH=${BATCH:-16}
STEPS=${STEPS:-1500}              # the schedule: STEPS x BATCH x CONTEXT tokens (197M by default)
PRETRAIN_MINUTES=${PRETRAIN_MINUTES:-8}
RESUME_MINUTES=${RESUME_MINUTES:-3}
FINETUNE_MINUTES=${FINETUNE_MINUTES:-5}
CORPUS_BYTES=${CORPUS_BYTES:-600000000}
APPLY_DATA=${APPLY_DATA:-$RUN/apply-train.jsonl.gz}
FINETUNE_CONFIG=${FINETUNE_CONFIG:-finetune/configs/fastapply-small.yaml}
EVAL_LIMIT=${EVAL_LIMIT:-450}     # tasks for the fastapply policy (exact match, speed)
PEER_LIMIT=${PEER_LIMIT:-10}      # tasks for plain decoding and prompt lookup, which are slow
RELEASE=${RELEASE:-models/fastapply-small}
DEVICE=${DEVICE:-auto}
EVAL_SECONDS=${EVAL_SECONDS:-150}
COMPILE=${COMPILE:-}               # --compile: torch.compile the model
export PYTHONUNBUFFERED=1 HF_HUB_OFFLINE=1

pretrain() {
    $PY -m finetune.pretrain train --tokens "$RUN/tokens" --tokenizer "$RUN/tokenizer" --out "$RUN/pretrain" \
        --shape "$SHAPE" --context "$CONTEXT" --batch-size "$BATCH" --steps "$STEPS" --eval-every 500 \
        --device "$DEVICE" $COMPILE "$@"
}

evaluate() {  # draft policies, how many tasks, tasks file, name of the run
    timeout "$EVAL_SECONDS" $PY -m fastapply eval --engine model --model "$RELEASE" --draft "$1" --limit "$2" \
        --tasks "$3" --device "$DEVICE" --out "$RUN/eval-$4" || echo "eval-$4 stopped (status $?)" >&2
}

pack() {  # name, paths: into $OUT as name.tar.aa, name.tar.ab, ... when $OUT is set
    local name=$1
    shift
    if [ -n "${OUT:-}" ]; then
        tar cf - "$@" | split -b 15M - "$OUT/$name.tar."
    fi
}

case "${1:-}" in
pretrain)
    [ -d "$RUN/corpus" ] || $PY -m data.build_corpus --out "$RUN/corpus" --max-bytes "$CORPUS_BYTES"
    [ -d "$RUN/tokenizer" ] || $PY -m finetune.pretrain tokenizer --corpus "$RUN/corpus" --out "$RUN/tokenizer" \
        --vocab-size "$VOCAB"
    [ -f "$RUN/tokens/meta.json" ] || $PY -m finetune.pretrain tokens --corpus "$RUN/corpus" \
        --tokenizer "$RUN/tokenizer" --out "$RUN/tokens"
    if [ -f "$RUN/pretrain/pretrain.json" ]; then
        pretrain --resume --minutes "$PRETRAIN_MINUTES"
    else
        pretrain --minutes "$PRETRAIN_MINUTES"
    fi
    pack pretrain "$RUN"/pretrain/pretrain.json "$RUN"/corpus/manifest.json "$RUN"/tokens/meta.json
    ;;
finetune)
    pretrain --resume --minutes "$RESUME_MINUTES"
    $PY -m finetune.train "$FINETUNE_CONFIG" --out "$RUN/finetune" --base-model "$RUN/pretrain" \
        --train-file "$APPLY_DATA" --max-minutes "$FINETUNE_MINUTES" --device "$DEVICE"
    $PY -m finetune.ship "$RUN/finetune" --out "$RELEASE"
    pack release "$RELEASE" "$RUN"/pretrain/pretrain.json "$RUN"/finetune/metrics.json
    ;;
eval)
    evaluate fastapply "$EVAL_LIMIT" evals/tasks/suite.jsonl.gz suite
    evaluate none,pld,fastapply "$PEER_LIMIT" evals/tasks/suite.jsonl.gz peers
    evaluate fastapply 6 evals/tasks/simple.jsonl simple
    pack evals "$RUN"/eval-*
    ;;
*)
    echo "usage: $0 pretrain|finetune|eval" >&2
    exit 2
    ;;
esac
