"""The eval suite's edits sent to ``fastapply serve`` as agents send them to Morph's and Relace's APIs: one
chat message in the apply form (``<code>``, ``<update>``; the file back as the message) and Relace's
``/v1/code/apply``, over HTTP on loopback, to a server started here with the shipped model (fastapply-small:
a certain merge is answered with no model run).

Only the edits the merge engine decides alone in the language the file's text tells are sent (the others
run the model: see ``fastapply eval`` for those): for each, the answer's status, whether it is the known
answer, what wrote it, and the wall time of the request as the client sees it (the language guess, the
merge, the checks and HTTP together).

    python benchmarks/apply_form_bench.py                # ~2 minutes on 2 cores

Prints a table; writes ``benchmarks/results/apply-form.json``.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from fastapply.evalconfig import git_commit  # noqa: E402
from fastapply.evaluate import default_tasks_path  # noqa: E402
from fastapply.syntax import guess_language  # noqa: E402
from fastapply.tasks import load_tasks  # noqa: E402
from guess_bench import merged  # noqa: E402

RESULTS = Path(__file__).resolve().parent / "results"


def main() -> None:
    import httpx
    import torch

    from fastapply import bundled
    from fastapply.loading import load_model
    from fastapply.server import ServeConfig, create_app, running_server

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tasks", type=Path, help="tasks (eval schema; default: the suite)")
    parser.add_argument("--out", type=Path, default=RESULTS / "apply-form.json")
    args = parser.parse_args()
    tasks = [task for task in load_tasks(args.tasks or default_tasks_path()) if not task.instruction]
    chosen = [task for task in tasks if merged(task, guess_language(task.original)) != "none"]  # the merge alone
    torch.set_num_threads(1)
    model, tokenizer = load_model(bundled.NAME)
    app = create_app(model, tokenizer, ServeConfig(model_name=bundled.NAME, merge_first=True))
    counts, seconds = Counter(), {"apply form": [], "/v1/code/apply": []}
    with running_server(app) as url, httpx.Client(base_url=url, timeout=600) as client:
        for task in chosen:
            for route, path, body, text_of in (
                    ("apply form", "/v1/chat/completions",
                     {"model": "morph-v3-fast", "messages": [
                         {"role": "user", "content": f"<code>{task.original}</code>\n<update>{task.update}</update>"}]},
                     lambda answer: answer["choices"][0]["message"]["content"]),
                    ("/v1/code/apply", "/v1/code/apply", {"initialCode": task.original, "editSnippet": task.update},
                     lambda answer: answer["mergedCode"])):
                start = time.perf_counter()
                response = client.post(path, json=body)
                seconds[route].append(time.perf_counter() - start)
                answer = response.json()
                ok = response.status_code == 200
                counts[f"{route} {response.status_code}"] += 1
                if ok:
                    counts[f"{route} exact"] += text_of(answer) == task.expected
                    counts[f"{route} by {answer['fastapply']['engine']}"] += 1
    timing = {route: {"median_ms": round(statistics.median(s) * 1000, 1), "max_ms": round(max(s) * 1000, 1)}
              for route, s in seconds.items() if s}
    print(f"{len(chosen)} of {len(tasks)} edits with no instruction decided by the merge engine alone")
    width = max(map(len, counts))
    for key, value in sorted(counts.items()):
        print(f"{key:<{width}}  {value:>5}")
    for route, t in timing.items():
        print(f"{route}: median {t['median_ms']} ms, max {t['max_ms']} ms a request")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps({"git_commit": git_commit(), "tasks": str(args.tasks or default_tasks_path()),
                                    "sent": len(chosen), "without_instruction": len(tasks),
                                    "counts": dict(sorted(counts.items())), "timing": timing}, indent=1) + "\n")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
