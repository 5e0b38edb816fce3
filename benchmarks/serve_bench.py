"""Throughput and latency of ``fastapply serve``: requests/s and p50/p95 latency at several client
concurrencies, and the latency of one request with ``prediction`` on and off.

    python benchmarks/serve_bench.py --out benchmarks/results/serve.json

By default the model is the tests' tiny Llama (2 layers, hidden 64) trained on one edit until it
answers it exactly (a few seconds), so the request does real work: the answer is the edited file and
the prediction (the original file) is mostly right. ``--model PATH`` benchmarks another checkpoint on
the same request. The server runs as a subprocess (``python -m fastapply serve``) on a free loopback
port, on one torch thread; clients are threads of this process using httpx. Prints a table and writes JSON.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from fastapply.bench import cpu_model  # noqa: E402


def build_checkpoint(out: Path) -> Path:
    """The tests' tiny Llama, trained on the example edit (see tests/serving.py)."""
    import torch

    from finetune.scratch import save_checkpoint, stdlib_corpus, train_tokenizer
    from tests.serving import learn_example

    torch.set_num_threads(2)
    tokenizer = train_tokenizer(stdlib_corpus(60), vocab_size=1024)
    model = learn_example(tokenizer)
    if model is None:
        raise SystemExit("the tiny model did not learn the example; try again")
    return save_checkpoint(model, tokenizer, out)


def start_server(model: Path, queue_size: int) -> tuple[subprocess.Popen, str]:
    import httpx

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    # one torch thread: on a shared or small machine, threads spinning against each other cost more than
    # a tiny model's matrix products gain from them
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    process = subprocess.Popen([sys.executable, "-m", "fastapply", "serve", "--model", str(model), "--device", "cpu",
                                "--port", str(port), "--queue-size", str(queue_size), "--threads", "1"], env=env,
                               stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 300
    while True:
        try:
            if httpx.get(f"{url}/health").status_code == 200:
                return process, url
        except httpx.TransportError:
            pass
        if process.poll() is not None or time.monotonic() > deadline:
            process.kill()
            raise SystemExit(f"the server did not start: {process.stderr.read().decode()[-2000:]}")
        time.sleep(0.2)


def request_body(prediction: bool) -> dict:
    from tests.serving import ORIGINAL, prompt_messages

    body = {"model": "bench", "messages": prompt_messages(), "max_tokens": 200, "temperature": 0}
    if prediction:
        body["prediction"] = {"type": "content", "content": f"<updated-code>\n{ORIGINAL}\n</updated-code>"}
    return body


def timed(client, body: dict) -> tuple[float, dict]:
    start = time.perf_counter()
    response = client.post("/v1/chat/completions", json=body)
    seconds = time.perf_counter() - start
    response.raise_for_status()
    return seconds, response.json()


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))]


def prediction_rows(client, repeats: int) -> list[dict]:
    rows = []
    for prediction in (False, True):
        body = request_body(prediction)
        runs = [timed(client, body) for _ in range(repeats)]
        last = runs[-1][1]
        latencies = [seconds for seconds, _ in runs]
        rows.append({
            "prediction": prediction, "requests": repeats,
            "latency_p50_s": round(statistics.median(latencies), 4),
            "latency_min_s": round(min(latencies), 4),
            "completion_tokens": last["usage"]["completion_tokens"],
            "accepted_prediction_tokens": last["usage"]["completion_tokens_details"]["accepted_prediction_tokens"],
            "rejected_prediction_tokens": last["usage"]["completion_tokens_details"]["rejected_prediction_tokens"],
            "passes": last["fastapply"]["passes"],
            "server_seconds_p50": round(statistics.median(r["fastapply"]["seconds"] for _, r in runs), 4),
        })
    return rows


def concurrency_rows(url: str, levels: list[int], requests: int) -> list[dict]:
    import httpx

    rows = []
    body = request_body(True)
    for clients in levels:
        with httpx.Client(base_url=url, timeout=600, limits=httpx.Limits(max_connections=clients)) as client:
            start = time.perf_counter()
            with ThreadPoolExecutor(max_workers=clients) as pool:
                latencies = [s for s, _ in pool.map(lambda _: timed(client, body), range(requests))]
            wall = time.perf_counter() - start
        rows.append({"clients": clients, "requests": requests, "wall_s": round(wall, 3),
                     "requests_per_s": round(requests / wall, 2),
                     "latency_p50_s": round(percentile(latencies, 0.5), 4),
                     "latency_p95_s": round(percentile(latencies, 0.95), 4)})
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", help="checkpoint to serve (default: the tests' tiny Llama, trained now)")
    parser.add_argument("--clients", default="1,4,16", help="concurrency levels")
    parser.add_argument("--requests", type=int, default=48, help="requests per concurrency level")
    parser.add_argument("--repeats", type=int, default=20, help="requests per prediction on/off row")
    parser.add_argument("--out", type=Path, help="write the results as JSON here")
    args = parser.parse_args()
    import httpx

    with tempfile.TemporaryDirectory() as tmp:
        model = Path(args.model) if args.model else build_checkpoint(Path(tmp) / "tiny-apply")
        levels = [int(c) for c in args.clients.split(",")]
        process, url = start_server(model, queue_size=max(levels) + 1)
        try:
            with httpx.Client(base_url=url, timeout=600) as client:
                for _ in range(3):  # warm-up: first-call overheads and the verify-cost calibration
                    timed(client, request_body(True))
                    timed(client, request_body(False))
                predictions = prediction_rows(client, args.repeats)
            concurrency = concurrency_rows(url, levels, args.requests)
        finally:
            process.terminate()
            process.wait(timeout=30)

    print(f"fastapply serve, model {args.model or 'tiny Llama (2 layers, hidden 64), trained on the example edit'}")
    print(f"{'prediction':>10} {'p50 s':>8} {'min s':>8} {'passes':>7} {'tokens':>7} {'accepted':>9}")
    for r in predictions:
        print(f"{'on' if r['prediction'] else 'off':>10} {r['latency_p50_s']:>8.4f} {r['latency_min_s']:>8.4f} "
              f"{r['passes']:>7} {r['completion_tokens']:>7} {r['accepted_prediction_tokens']:>9}")
    print(f"{'clients':>10} {'req/s':>8} {'p50 s':>8} {'p95 s':>8}")
    for r in concurrency:
        print(f"{r['clients']:>10} {r['requests_per_s']:>8.2f} {r['latency_p50_s']:>8.4f} {r['latency_p95_s']:>8.4f}")
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps({
            "command": " ".join(["python", "benchmarks/serve_bench.py", *sys.argv[1:]]),
            "model": args.model or "tiny Llama (2 layers, hidden 64, vocab 1024), trained on the example edit",
            "machine": f"{platform.machine()}, {cpu_model()}, {os.cpu_count()} cores, {platform.system()}; "
                       "server on 1 torch thread",
            "load_average_1m_at_end": round(os.getloadavg()[0], 2),
            "prediction": predictions, "concurrency": concurrency}, indent=1) + "\n")


if __name__ == "__main__":
    main()
