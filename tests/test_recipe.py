"""finetune/fastapply-small.sh end to end at tiny scale on the CPU: its three stages run in order and
each leaves in $OUT what must come back from a GPU machine, and the release loads as a model."""

from __future__ import annotations

import gzip
import os
import subprocess
import sys
import tarfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_three_stages_leave_a_release_and_eval_runs(tmp_path):
    apply_data = tmp_path / "apply.jsonl.gz"
    with gzip.open(ROOT / "data" / "train" / "valid.jsonl.gz", "rt") as source, gzip.open(apply_data, "wt") as out:
        out.writelines(line for _, line in zip(range(12), source))
    text = (ROOT / "finetune" / "configs" / "fastapply-small.yaml").read_text()
    for old, new in (("batch_size: 8", "batch_size: 1"), ("eval_limit: 64", "eval_limit: 2"),
                     ("max_length: 8192", "max_length: 4096")):  # the GPU's batches, shrunk for a test
        assert old in text
        text = text.replace(old, new)
    config = tmp_path / "finetune.yaml"
    config.write_text(text)
    run, release, out = tmp_path / "run", tmp_path / "release", tmp_path / "out"
    out.mkdir()
    env = os.environ | {
        "PYTHON": sys.executable, "RUN": str(run), "RELEASE": str(release), "OUT": str(out), "SHAPE": "tiny",
        "VOCAB": "512", "CONTEXT": "128", "BATCH": "2", "STEPS": "6", "PRETRAIN_MINUTES": "10",
        "RESUME_MINUTES": "10", "FINETUNE_MINUTES": "0.1", "CORPUS_BYTES": "2500000", "APPLY_DATA": str(apply_data),
        "FINETUNE_CONFIG": str(config),
        "EVAL_LIMIT": "1", "PEER_LIMIT": "1", "EVAL_SECONDS": "120", "DEVICE": "cpu", "OMP_NUM_THREADS": "1",
    }
    for stage in ("pretrain", "finetune", "eval"):
        done = subprocess.run(["bash", str(ROOT / "finetune" / "fastapply-small.sh"), stage], env=env,
                              capture_output=True, text=True, timeout=600)
        assert done.returncode == 0, done.stderr[-2000:]

    def members(name: str) -> list[str]:
        parts = sorted(out.glob(f"{name}.tar.*"))
        assert parts, name
        joined = tmp_path / f"{name}.tar"
        joined.write_bytes(b"".join(p.read_bytes() for p in parts))
        with tarfile.open(joined) as archive:
            return archive.getnames()

    assert any(m.endswith("pretrain/pretrain.json") for m in members("pretrain"))
    assert any(m.endswith("release/model.safetensors") for m in members("release"))
    evals = members("evals")
    for name in ("suite", "peers", "simple"):
        assert any(m.endswith(f"eval-{name}/summary.json") for m in evals), name

    from fastapply.target import load_model

    model, tokenizer = load_model(str(release), device="cpu", dtype="float32")
    assert len(tokenizer) == 512 and model.config.num_hidden_layers == 2
