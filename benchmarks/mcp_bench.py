"""The eval suite's edits sent as a coding agent sends them to ``fastapply mcp``: each task's file written
in a fresh folder under its own path, then one ``edit_file`` call (its update, and its instruction where it
has one) over the Model Context Protocol on stdio, to one ``fastapply mcp --engine merge`` process (no
model: what the merge engine does not decide is refused, the file left as it was).

For each task: whether the call was applied, whether the file on disk is then the known answer (or, refused,
still the original), and the wall time of the call as the client sees it (read, merge, checks, the atomic
write, the diff answered).

    python benchmarks/mcp_bench.py                # ~1 minute on 2 cores

Prints a table; writes ``benchmarks/results/mcp.json``.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from fastapply.evalconfig import git_commit  # noqa: E402
from fastapply.evaluate import default_tasks_path  # noqa: E402
from fastapply.tasks import load_tasks  # noqa: E402

RESULTS = Path(__file__).resolve().parent / "results"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tasks", type=Path, help="tasks (eval schema; default: the suite)")
    parser.add_argument("--out", type=Path, default=RESULTS / "mcp.json")
    args = parser.parse_args()
    tasks = load_tasks(args.tasks or default_tasks_path())
    counts, seconds = Counter(), []
    with tempfile.TemporaryDirectory() as folder:
        server = subprocess.Popen([sys.executable, "-m", "fastapply", "mcp", "--engine", "merge"], cwd=folder,
                                  stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)

        def call(ident: int, method: str, params: dict) -> dict:
            server.stdin.write(json.dumps({"jsonrpc": "2.0", "id": ident, "method": method, "params": params}) + "\n")
            server.stdin.flush()
            return json.loads(server.stdout.readline())

        call(0, "initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                               "clientInfo": {"name": "mcp_bench", "version": "1"}})
        for n, task in enumerate(tasks, 1):
            path = Path(folder, f"{n}", task.path)
            path.parent.mkdir(parents=True)
            path.write_text(task.original, encoding="utf-8")
            arguments = {"path": str(path.relative_to(folder)), "code_edit": task.update}
            if task.instruction:
                arguments["instruction"] = task.instruction
            start = time.perf_counter()
            result = call(n, "tools/call", {"name": "edit_file", "arguments": arguments})["result"]
            seconds.append(time.perf_counter() - start)
            text = path.read_text(encoding="utf-8")
            if result["isError"]:
                counts["refused"] += 1
                counts["refused, file unchanged"] += text == task.original
            else:
                counts["applied"] += 1
                counts["applied, file exact"] += text == task.expected
        server.stdin.close()
        server.wait(timeout=60)
    timing = {"median_ms": round(statistics.median(seconds) * 1000, 1),
              "p90_ms": round(sorted(seconds)[int(0.9 * len(seconds))] * 1000, 1),
              "max_ms": round(max(seconds) * 1000, 1)}
    print(f"{len(tasks)} edit_file calls to fastapply mcp --engine merge")
    for key, value in sorted(counts.items()):
        print(f"{key:<24}  {value:>5}")
    print(f"a call: median {timing['median_ms']} ms, p90 {timing['p90_ms']} ms, max {timing['max_ms']} ms")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps({"git_commit": git_commit(), "tasks": str(args.tasks or default_tasks_path()),
                                    "calls": len(tasks), "counts": dict(sorted(counts.items())), "timing": timing},
                                   indent=1) + "\n")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
