"""Can the apply model vouch for an uncertain merge? For each edit whose merge is only ``likely``, one
teacher-forced pass of the model over the prompt and the merged candidate as its answer, and the
candidate's largest regret: the most nats by which the model's top choice beats the candidate's token at
any position (0 when greedy decoding would write the candidate exactly). A model that vouches well
gives exact candidates small regrets and wrong ones large: a threshold would then let ``--engine auto``
write a likely merge after one pass instead of a whole rewrite.

    python benchmarks/vouch_bench.py                                   # fastapply-small on the suite
    python benchmarks/vouch_bench.py --records data/train/valid.jsonl.gz data/train/train.jsonl.gz \\
        --out benchmarks/results/vouch-train.json

Edits with an instruction are left out (a merge reads only the snippet). Prints, for each threshold,
the candidates it would vouch for and how many of them are exact or wrong; writes the per-edit figures
as JSON (``benchmarks/results/vouch.json``). About 10 minutes for the suite's ~100 likely merges on 2
cores, float32.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from fastapply.evaluate import default_tasks_path  # noqa: E402
from fastapply.loading import load_model  # noqa: E402
from fastapply.merge import merge  # noqa: E402
from fastapply.prompt import get_preset  # noqa: E402
from finetune.examples import build_example, read_records  # noqa: E402
from finetune.heldout import evaluate  # noqa: E402

RESULTS = Path(__file__).resolve().parent / "results" / "vouch.json"
THRESHOLDS = (0.5, 1.0, 2.0, 3.0, 4.0, 6.0)  # nats


def likely_merges(records: list[dict]) -> list[dict]:
    """The records (no instruction) whose merge is ``likely``, each with its candidate as ``candidate``."""
    found = []
    for record in records:
        if record.get("instruction"):
            continue
        result = merge(record["original"], record["update"], record["language"])
        if result.confidence == "likely":
            found.append(dict(record, candidate=result.text))
    return found


def vouched(rows: list[dict], threshold: float) -> dict:
    """How many candidates a threshold on the largest regret vouches for, and how many of those are right.
    E.g. rows [{"regret": 0.2, "exact": True}, {"regret": 3.0, "exact": False}], 1.0 -> 1 vouched, 1 exact."""
    chosen = [row for row in rows if row["regret"] < threshold]
    return {"threshold": threshold, "vouched": len(chosen), "exact": sum(row["exact"] for row in chosen),
            "wrong": sum(not row["exact"] for row in chosen)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--model", default="fastapply-small")
    parser.add_argument("--records", nargs="*", default=None,
                        help="JSONL edits with their answers (default: the eval suite)")
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args(argv)
    records = [record for path in args.records or [default_tasks_path()] for record in read_records(path)]
    candidates = likely_merges(records)
    model, tokenizer = load_model(args.model, "cpu", "float32")
    preset = get_preset("default")
    rows = []
    for record in candidates:  # one pass each: the candidate as the answer
        example = build_example(tokenizer, preset, dict(record, expected=record["candidate"]))
        found = evaluate(model, [example], pad_id=tokenizer.pad_token_id or 0).where[0]
        rows.append({"id": record.get("id"), "exact": record["candidate"] == record["expected"],
                     "regret": round(max((miss.regret for miss in found), default=0.0), 3), "misses": len(found)})
        print(f"{rows[-1]['id']}: {'exact' if rows[-1]['exact'] else 'wrong'}, largest regret "
              f"{rows[-1]['regret']:.2f} nats, {len(found)} missed", flush=True)
    table = [vouched(rows, threshold) for threshold in THRESHOLDS]
    print(f"\n{len(rows)} likely merges ({sum(r['exact'] for r in rows)} exact) of {len(records)} edits")
    print("| largest regret under | vouched | exact | wrong |\n|---:|---:|---:|---:|")
    for line in table:
        print(f"| {line['threshold']} nats | {line['vouched']} | {line['exact']} | {line['wrong']} |")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps({"command": " ".join(sys.argv), "model": args.model,
                                    "records": args.records or "suite", "edits": len(records),
                                    "thresholds": table, "rows": rows}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
