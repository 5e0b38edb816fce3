"""Benchmark of the merge engine (no model) on generated edits of real files.

    python benchmarks/merge_bench.py                 # 1,200 edits, seed 0
    python benchmarks/merge_bench.py --edits 300 --seed 1
    python benchmarks/merge_bench.py --sources DIR... --replay 0   # every language of the files under DIR
    python benchmarks/merge_bench.py --known evals/tasks/suite.jsonl.gz data/train/train.jsonl.gz \
        data/train/valid.jsonl.gz        # known answers instead of generated edits

Each edit is a random change of a real file (``benchmarks/edits.py``: this Python's standard library
and the JavaScript of the node installation), turned into an update snippet by
``fastapply.snippet.make_snippet`` with 1 to 3 lines of context. Edits that leave the file with more
syntax errors than before are drawn again (they are not edits anyone would make). Reported: the
precision of ``certain`` (share of certain merges that are exactly the edited file), the share of
edits resolved as ``certain``, and the median merge time on files of 350-450 lines; and, on the first
``--replay`` edits, the forward passes speculative edits need on a ``ReplayTarget`` (a target that
answers the edited file, so passes measure the draft alone) drafting from the original file vs from
the merged candidate first. Prints tables and writes ``benchmarks/results/merge.json``.

With ``--sources``, the files are those under the given folders, of every language fastapply knows,
each language drawn as often, and every edit is of lines alone (inserted, replaced, deleted; new lines
are other lines of the file with a word changed), the same kinds in every language so that languages
compare; written to ``benchmarks/results/merge-languages.json``. With ``--blocks`` as well, each
snippet is an indented block of the file alone, one line inside it edited, with no marker (a changed
block pasted as it is, ``edits.block_edit``): ``merge-blocks.json``; with ``--regions``, a run of lines
anywhere in the file that is not the whole file, edited the same way (the part that changed, pasted as
it is: a README's section, a class without its imports, ``edits.region_edit``): ``merge-regions.json``;
with ``--keys``, the YAML, TOML and JSON files only (with ``--other``, files of no known language too,
read as INI), each snippet the path to one key whose value changed (the headers above it and its new
line, ``edits.key_edit``; by kind: ``keys-gap`` where it leaves out lines between those it shows,
``keys-run`` where they are a run of the file's lines): ``merge-keys.json``; with ``--new-keys``, the path
to a key the file lacks, added after one of its keys (a YAML block, a TOML or INI section at the file's end:
``edits.new_key_edit``): ``merge-new-keys.json``. Two modes of code files alone, with markers as a chat
model or an agent writes them: ``--beside``, a line changed, shown with a marker right after it (before it)
and lines of the file above (below) it: a store's value, another line's number or string, or such a line's
changed copy added beside it (``edits.beside_edit``): ``merge-beside.json``;
``--functions``, a top-level definition shown from its first line with no marker above it, one line inside
it changed between markers, and its closing line (``edits.function_edit``), merged as the CLI reads it
(``engine.merge_reading``, which decides the code beyond an edge with no marker): ``merge-functions.json``;
``--definitions``, a top-level definition added like its neighbour, between two or after the last, the last
lines of the one above shown, then the new one, then the next one's lines to its header and a marker (or,
after the last, nothing: the code below it kept), merged as the CLI reads it (``edits.definition_edit``):
``merge-definitions.json``; ``--methods``, the same for a method among its siblings in a class (after the
last, a marker at column 0 after it): ``merge-methods.json``.

With ``--known``, the edits are tasks in the eval suite's schema (the suite, the training set): each
update is merged into its original and compared with the task's expected file; the same figures by
file, and the ids of the certain merges that are wrong, go to ``benchmarks/results/merge-known.json``.
Instruction-only tasks (no update to merge) are left out. A change to the merge engine is measured
against the engine before it: ``--merges PATH`` keeps each task's confidence and exactness (run it on
the old checkout), ``--against PATH`` lists the tasks whose merge the new engine changes; ``--fenced`` puts
each update in a chat model's answer (a fenced block below a line of words), read as the CLI reads one,
to ``merge-known-fenced.json``; ``--spaced`` takes the tasks whose file and update indent with tabs and
turns each of the update's leading tabs into four spaces (a snippet typed at a terminal, or by a chat
model that writes spaces), read as the CLI reads one, to ``merge-known-spaced.json``; ``--crlf`` gives each
update CRLF line ends (as an agent's JSON may carry them to ``fastapply batch`` or the MCP tool), read so,
to ``merge-known-crlf.json``; ``--bare`` makes each lazy marker of an update a bare ``...`` at its
indentation (as some chat models write them), read so, to ``merge-known-bare.json``; ``--doubled`` takes the
tasks whose file indents with two spaces a level and doubles the update's leading spaces (a chat model
writing four), read so, to ``merge-known-doubled.json``; ``--stripped`` takes the tasks whose update has a line
with trailing whitespace and cuts it from every line (as editors and chat models do), read so, to
``merge-known-stripped.json``; ``--numbered`` puts a number and an arrow before each line of an update but
its lazy markers and blank lines (``     12→``, an agent copying its file viewer), read so, to
``merge-known-numbered.json``:

    python benchmarks/merge_bench.py --known evals/tasks/suite.jsonl.gz --merges runs/merges-before.json
    python benchmarks/merge_bench.py --known evals/tasks/suite.jsonl.gz --against runs/merges-before.json
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import re
import statistics
import sys
import time
from collections import Counter
from functools import partial
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from edits import (OTHER, beside_edit, block_edit, corpus, definition_edit, function_edit, import_edit,  # noqa: E402
                   key_edit, new_key_edit, random_edit, region_edit, sources)

from fastapply.bench import cpu_model  # noqa: E402
from fastapply.engine import merge_edit, merge_reading, read_edit  # noqa: E402
from fastapply.markers import marker_lines  # noqa: E402
from fastapply.merge import merge  # noqa: E402
from fastapply.snippet import make_snippet  # noqa: E402
from fastapply.syntax import count_errors, parse  # noqa: E402

RESULTS = Path(__file__).resolve().parent / "results" / "merge.json"
KNOWN_RESULTS = RESULTS.with_name("merge-known.json")
# --known's forms of an update, each read as the CLI reads it (``run_known``), and its JSON, merge-known-FORM.json
FORMS = {
    "fenced": "each update as a chat model's answer, in a fenced block",
    "spaced": "only the tasks whose file and update indent with tabs, each of the update's leading tabs four spaces",
    "crlf": "each update with CRLF line ends",
    "bare": "each lazy marker of an update a bare '...'",
    "doubled": "only the tasks whose file indents with two spaces a level, the update's leading spaces doubled",
    "stripped": "only the tasks whose update has trailing whitespace, cut from every line",
    "numbered": "each update line but the markers and blank ones numbered as an agent's file viewer numbers it",
}
_TABS, _SPACES = re.compile(r"^\t+", re.M), re.compile(r"^ +", re.M)
_TRAILING = re.compile(r"[ \t]+$", re.M)
SOURCES_RESULTS = RESULTS.with_name("merge-languages.json")
BLOCKS_RESULTS = RESULTS.with_name("merge-blocks.json")
REGIONS_RESULTS = RESULTS.with_name("merge-regions.json")
KEYS_RESULTS = RESULTS.with_name("merge-keys.json")
NEW_KEYS_RESULTS = RESULTS.with_name("merge-new-keys.json")
BESIDE_RESULTS = RESULTS.with_name("merge-beside.json")
FUNCTIONS_RESULTS = RESULTS.with_name("merge-functions.json")
DEFINITIONS_RESULTS = RESULTS.with_name("merge-definitions.json")
METHODS_RESULTS = RESULTS.with_name("merge-methods.json")
IMPORTS_RESULTS = RESULTS.with_name("merge-imports.json")
ALONE = {"blocks": block_edit, "regions": region_edit}  # snippets of one changed part alone, no marker
KEY_EDITS = {"keys": key_edit, "new-keys": new_key_edit}  # paths of keys, told the language
KEYED = ("yaml", "toml", "json")  # the languages of ``--keys`` and ``--new-keys``
NOT_CODE = (*KEYED, "css", "html", "markdown", OTHER)  # no language of ``CODE_EDITS``
CODE_EDITS = {"beside": beside_edit, "functions": function_edit,  # snippets with markers in code, told the language
              "definitions": definition_edit, "methods": partial(definition_edit, nested=True),
              "imports": import_edit}
AS_THE_CLI = ("functions", "definitions", "methods", "imports")  # merged as the CLI reads a snippet's unmarked edges


def run(n_edits: int, seed: int, js_share: float, replay: int, dirs: list[Path] | None = None,
        alone: str | None = None, other: bool = False) -> dict:
    """``n_edits`` generated edits: of Python and JavaScript (``js_share`` of them) files, or with ``dirs``,
    of the files under them, each language drawn as often; with ``alone`` (a key of ``ALONE``, or
    of ``KEY_EDITS``: the path to a key whose value changed, or to a new key, in the files of ``KEYED``), each
    snippet is a
    changed part alone, with no marker; with ``other``, files of no language fastapply knows too
    (``edits.OTHER``), merged with no parser."""
    rng = random.Random(seed)
    files = sources(dirs, other=other) if dirs else {"python": corpus("python"), "javascript": corpus("javascript")}
    if alone in KEY_EDITS:  # with ``other``, the files of no known language too, read as INI
        files = {language: found for language, found in files.items() if language in KEYED or language == OTHER}
    if alone in CODE_EDITS:
        files = {language: found for language, found in files.items() if language not in NOT_CODE}
    if not dirs and not files["javascript"]:
        js_share = 0.0
    texts: dict[Path, str] = {}
    rows = []
    redrawn = 0
    while len(rows) < n_edits:
        if dirs:
            language = rng.choice(sorted(files))
        else:
            language = "javascript" if rng.random() < js_share else "python"
        path = rng.choice(files[language])
        text = texts.setdefault(path, path.read_text("utf-8"))
        code = None if language == OTHER else language  # the language the merge is told
        if alone:
            drawn = (ALONE[alone](rng, text) if alone in ALONE
                     else {**KEY_EDITS, **CODE_EDITS}[alone](rng, text, language))
            edited, snippet, kind = drawn or (text, "", "")
            context = 0
        else:
            edited, kind = random_edit(rng, text, code, lines_only=bool(dirs))
            context = rng.choice([1, 2, 3, 3])
        if edited == text or code is not None and count_errors(edited, code) > count_errors(text, code):
            redrawn += 1
            continue
        if not alone:
            snippet = make_snippet(text, edited, code, context=context)
        parse.cache_clear()  # each merge parses its files afresh, as one CLI run does
        start = time.perf_counter()
        result = (merge_reading(text, read_edit(text, snippet, code), code) if alone in AS_THE_CLI
                  else merge(text, snippet, code))
        seconds = time.perf_counter() - start
        rows.append({
            "language": language, "kind": kind, "context": context, "lines": text.count("\n"),
            "confidence": result.confidence, "exact": result.text == edited, "seconds": seconds,
        })
        if len(rows) <= replay:
            passes = replay_passes(text, snippet, edited, result.text)
            if passes is not None:
                rows[-1]["passes"] = passes
    return summarise(rows, redrawn, seed, js_share, dirs, alone, other)


def replay_passes(original: str, snippet: str, edited: str, merged: str | None) -> dict | None:
    """Forward passes of speculative edits (``fastapply`` drafter) on a ``ReplayTarget`` that answers
    the edited file, drafting from the original file alone and with the merged candidate first."""
    from fastapply.apply import plan_edit, run_plan
    from fastapply.prompt import answer_ids, get_preset
    from fastapply.replay import ReplayTarget

    tokenizer = _tokenizer()
    if any(special in text for special in tokenizer.all_special_tokens for text in (original, snippet, edited)):
        return None  # the toy tokenizer reads "<s>" in code as its special token; such files are left out
    preset = get_preset("default")
    reference = answer_ids(tokenizer, preset, edited)
    passes = {"tokens": len(reference)}
    for label, candidate in (("original_draft", None), ("merged_draft", merged)):
        plan = plan_edit(tokenizer, original, snippet, "", preset, candidate)
        result = run_plan(ReplayTarget(reference, tokenizer.eos_token_id), tokenizer, plan, "fastapply",
                          max_new_tokens=len(reference) + 16)
        assert result.text == edited  # the replayed answer is the edited file whatever the draft
        passes[label] = result.stats.passes
    return passes


_TOKENIZERS: list = []


def _tokenizer():
    """A byte-level BPE (1,024 tokens) trained on 60 standard library modules, as in the tests."""
    if not _TOKENIZERS:
        import torch

        from finetune.scratch import stdlib_corpus, train_tokenizer

        torch.set_num_threads(1)
        _TOKENIZERS.append(train_tokenizer(stdlib_corpus(60), vocab_size=1024))
    return _TOKENIZERS[0]


def machine() -> str:
    return f"{platform.machine()} {cpu_model()} {os.cpu_count()} cpus, Python {platform.python_version()}".replace(
        "  ", " ")


def figures(rows: list[dict]) -> dict:
    """Precision and share of certain merges, and the likely and failed ones, over merge rows."""
    certain = [r for r in rows if r["confidence"] == "certain"]
    correct = sum(r["exact"] for r in certain)
    return {
        "edits": len(rows),
        "certain": len(certain),
        "certain_correct": correct,
        "precision_certain": correct / len(certain) if certain else None,
        "share_certain": len(certain) / len(rows) if rows else None,
        "likely": sum(r["confidence"] == "likely" for r in rows),
        "likely_exact": sum(r["confidence"] == "likely" and r["exact"] for r in rows),
        "none": sum(r["confidence"] == "none" for r in rows),
    }


def _formed(original: str, update: str, language: str | None, form: str) -> str | None:
    """``update`` in ``form`` (``FORMS``); None where the form leaves its task out."""
    if form == "fenced":
        return f"Here is the change:\n\n```{language}\n{update.rstrip(chr(10))}\n```\n"
    if form == "spaced":
        tabbed = _TABS.search(original) and _TABS.search(update)
        return _TABS.sub(lambda tabs: "    " * len(tabs.group()), update) if tabbed else None
    if form == "doubled":
        two = _two_a_level(original) and _SPACES.search(update)
        return _SPACES.sub(lambda spaces: spaces.group() * 2, update) if two else None
    if form == "stripped":
        return _TRAILING.sub("", update) if _TRAILING.search(update) else None
    return {"crlf": lambda: update.replace("\n", "\r\n"), "bare": lambda: _bare(update, language),
            "numbered": lambda: _numbered(update, language)}[form]()


def _bare(update: str, language: str | None) -> str:
    """``update`` with each lazy marker line a bare ``...`` at its indentation."""
    lines = update.split("\n")
    return "\n".join(line[:len(line) - len(line.lstrip())] + "..." if marker else line
                     for line, marker in zip(lines, marker_lines(lines, language)))


def _numbered(update: str, language: str | None) -> str:
    """``update`` with each line but its lazy markers and blank ones after its number in the update and an
    arrow, as an agent's file viewer shows a file (``     12\u2192``)."""
    lines = update.split("\n")
    return "\n".join(line if marker or not line.strip() else f"{i + 1:>6}\u2192{line}"
                     for i, (line, marker) in enumerate(zip(lines, marker_lines(lines, language))))


def _two_a_level(text: str) -> bool:
    """Whether ``text`` indents with spaces alone, an even number of them, some at an odd level of two."""
    leads = [len(spaces.group()) for spaces in _SPACES.finditer(text)]
    return bool(leads) and "\t" not in text and all(n % 2 == 0 for n in leads) and any(n % 4 == 2 for n in leads)


def run_known(paths: list[Path], merges: Path | None = None, against: Path | None = None,
              form: str | None = None) -> dict:
    """Merge every task of ``paths`` (eval-suite schema) and compare with its expected file; each task's
    (confidence, exact) written to ``merges``, and the tasks whose pair differs from ``against``'s listed.
    ``form``: each update in that form (``FORMS``, ``_formed``), read as the CLI reads it
    (``engine.read_edit``, ``merge_reading``)."""
    from fastapply.errors import FastapplyError
    from fastapply.tasks import load_tasks

    rows = []
    for path in paths:
        for task in load_tasks(path):
            answer = _formed(task.original, task.update, task.language, form) if form else task.update
            if not task.update.strip() or answer is None:
                continue
            parse.cache_clear()
            start = time.perf_counter()
            try:
                if form is not None:
                    result = merge_reading(task.original, read_edit(task.original, answer, task.language,
                                                                    task.instruction), task.language)
                else:
                    result = merge_edit(task.original, task.update, task.language, task.instruction)
                confidence, exact = result.confidence, result.text == task.expected
            except FastapplyError:  # a language the merge engine does not know
                confidence, exact = "none", False
            rows.append({"file": str(path), "id": task.id, "language": task.language,
                         "confidence": confidence, "exact": exact, "seconds": time.perf_counter() - start})
    pairs = {f"{r['file']}:{r['id']}": [r["confidence"], r["exact"]] for r in rows}
    if merges is not None:
        merges.parent.mkdir(parents=True, exist_ok=True)
        merges.write_text(json.dumps(pairs) + "\n")
    before = json.loads(against.read_text()) if against is not None else {}
    return {
        "command": "python benchmarks/merge_bench.py --known " + " ".join(str(p) for p in paths)
                   + (f" --{form}" if form else ""),
        "machine": machine(),
        "all": figures(rows),
        "by_file": {str(p): figures([r for r in rows if r["file"] == str(p)]) for p in paths},
        "by_language": {lang: figures([r for r in rows if r["language"] == lang])
                        for lang in sorted({r["language"] for r in rows})},
        "median_ms_all": 1000 * statistics.median(r["seconds"] for r in rows) if rows else None,
        "wrong_certain": [f"{r['file']}:{r['id']}" for r in rows if r["confidence"] == "certain" and not r["exact"]],
        **({"against": str(against), "changed": [{"task": key, "before": before[key], "after": pair}
                                                 for key, pair in pairs.items() if key in before and before[key] != pair],
            "not_in_against": sum(key not in before for key in pairs)} if against is not None else {}),
    }


def summarise(rows: list[dict], redrawn: int, seed: int, js_share: float, dirs: list[Path] | None = None,
              alone: str | None = None, other: bool = False) -> dict:
    around_400 = [r["seconds"] for r in rows if 350 <= r["lines"] <= 450]
    replayed = [r for r in rows if "passes" in r]

    def replay_figures(subset: list[dict]) -> dict:
        original = sum(r["passes"]["original_draft"] for r in subset)
        merged = sum(r["passes"]["merged_draft"] for r in subset)
        tokens = sum(r["passes"]["tokens"] for r in subset)
        return {"edits": len(subset), "tokens": tokens, "passes_original_draft": original,
                "passes_merged_draft": merged,
                "tokens_per_pass_original_draft": tokens / original if original else None,
                "tokens_per_pass_merged_draft": tokens / merged if merged else None,
                "pass_reduction": 1 - merged / original if original else None}
    return {
        "command": f"python benchmarks/merge_bench.py --edits {len(rows)} --seed {seed} "
                   + (f"--sources {' '.join(str(d) for d in dirs)} " if dirs else f"--js-share {js_share} ")
                   + (f"--{alone} " if alone else "") + ("--other " if other else "")
                   + f"--replay {len(replayed)}",
        "machine": machine(),
        "redrawn_edits": redrawn,
        "all": figures(rows),
        "by_language": {lang: figures([r for r in rows if r["language"] == lang])
                        for lang in sorted({r["language"] for r in rows})},
        "by_context": {str(c): figures([r for r in rows if r["context"] == c])
                       for c in sorted({r["context"] for r in rows}) if c},
        "by_kind": {kind: figures([r for r in rows if r["kind"] == kind])
                    for kind in sorted({r["kind"] for r in rows})},
        "median_ms_all": 1000 * statistics.median(r["seconds"] for r in rows),
        "median_ms_350_450_lines": 1000 * statistics.median(around_400) if around_400 else None,
        "files_350_450_lines": len(around_400),
        "replay": {"policy": "fastapply", "target": "ReplayTarget (answers the edited file)",
                   "tokenizer": "byte-level BPE, 1,024 tokens, trained on 60 stdlib modules",
                   "all": replay_figures(replayed) if replayed else None,
                   "by_confidence": {c: replay_figures([r for r in replayed if r["confidence"] == c])
                                     for c in ("certain", "likely", "none")
                                     if any(r["confidence"] == c for r in replayed)}},
        "wrong_certain_kinds": dict(Counter(r["kind"] for r in rows if r["confidence"] == "certain"
                                            and not r["exact"])),
    }


def show(report: dict) -> None:
    from rich.console import Console
    from rich.table import Table

    table = Table(title=f"merge engine on {report['all']['edits']} generated edits ({report['machine']})")
    for column in ("slice", "edits", "certain", "precision of certain", "share certain", "likely", "none"):
        table.add_column(column, justify="right" if column != "slice" else "left")
    slices = [("all", report["all"])] + list(report["by_language"].items()) + [
        (f"context {c}", f) for c, f in report["by_context"].items()] + (
        [(kind, f) for kind, f in report["by_kind"].items()
         if kind.startswith(("keys-", "new-", "between", "end", "method-", "import-"))])
    for name, f in slices:
        precision = f"{100 * f['precision_certain']:.2f}%" if f["precision_certain"] is not None else "-"
        table.add_row(name, str(f["edits"]), str(f["certain"]), precision, f"{100 * f['share_certain']:.1f}%",
                      str(f["likely"]), str(f["none"]))
    console = Console()
    console.print(table)
    if report["replay"]["all"]:
        replay = Table(title=f"speculative edits on a ReplayTarget, first {report['replay']['all']['edits']} edits: "
                             "forward passes by draft")
        for column in ("merge confidence", "edits", "tokens", "passes, original-file draft", "passes, merged draft",
                       "tokens/pass (orig -> merged)", "fewer passes"):
            replay.add_column(column, justify="right" if column != "merge confidence" else "left")
        for name, f in [("all", report["replay"]["all"]), *report["replay"]["by_confidence"].items()]:
            replay.add_row(name, str(f["edits"]), str(f["tokens"]), str(f["passes_original_draft"]),
                           str(f["passes_merged_draft"]), f"{f['tokens_per_pass_original_draft']:.1f} -> "
                           f"{f['tokens_per_pass_merged_draft']:.1f}", f"{100 * f['pass_reduction']:.1f}%")
        Console(width=150).print(replay)
    around_400 = (f", {report['median_ms_350_450_lines']:.1f} ms on {report['files_350_450_lines']} edits of "
                  f"350-450-line files" if report["median_ms_350_450_lines"] is not None else "")
    console.print(f"median merge time: {report['median_ms_all']:.1f} ms (all files){around_400}")


def show_known(report: dict) -> None:
    from rich.console import Console
    from rich.table import Table

    table = Table(title=f"merge engine on {report['all']['edits']} known answers ({report['machine']})")
    for column in ("slice", "edits", "certain", "certain and exact", "precision of certain", "likely (exact)",
                   "none"):
        table.add_column(column, justify="right" if column != "slice" else "left")
    for name, f in [("all", report["all"]), *report["by_file"].items(), *report["by_language"].items()]:
        precision = f"{100 * f['precision_certain']:.2f}%" if f["precision_certain"] is not None else "-"
        table.add_row(name, str(f["edits"]), str(f["certain"]), str(f["certain_correct"]), precision,
                      f"{f['likely']} ({f['likely_exact']})", str(f["none"]))
    console = Console(width=150)
    console.print(table)
    for task in report["wrong_certain"]:
        console.print(f"certain and wrong: {task}")
    if "changed" in report:
        console.print(f"{len(report['changed'])} merges changed against {report['against']} "
                      f"({report['not_in_against']} tasks not in it)")
        for change in report["changed"]:
            (old_confidence, old_exact), (confidence, exact) = change["before"], change["after"]
            console.print(f"  {change['task']}: {old_confidence}{' exact' if old_exact else ''} -> "
                          f"{confidence}{' exact' if exact else ''}", markup=False)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--edits", type=int, default=1200)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--js-share", type=float, default=0.3, help="share of edits of JavaScript files")
    parser.add_argument("--replay", type=int, default=200,
                        help="also count decoding passes (ReplayTarget) with each draft on the first N edits")
    parser.add_argument("--sources", type=Path, nargs="+", metavar="DIR",
                        help="edit the files under these folders, of every language fastapply knows, each "
                             "language as often (instead of Python and JavaScript)")
    parser.add_argument("--blocks", action="store_true",
                        help="with --sources: each snippet is a changed indented block alone, with no marker")
    parser.add_argument("--regions", action="store_true",
                        help="with --sources: each snippet is a changed run of lines alone (not the whole file), "
                             "with no marker")
    parser.add_argument("--keys", action="store_true",
                        help="with --sources: YAML, TOML and JSON files only, each snippet the path to a key whose "
                             "value changed (the headers above it and its new line), with no marker")
    parser.add_argument("--new-keys", action="store_true",
                        help="as --keys, but each snippet the path to a key the file lacks, added after one of "
                             "its keys")
    parser.add_argument("--beside", action="store_true",
                        help="with --sources: code files only, each snippet a changed line (a store, another line, "
                             "a changed copy added), a marker right after it (before it), lines of the file above "
                             "(below) it")
    parser.add_argument("--functions", action="store_true",
                        help="with --sources: code files only, each snippet a top-level definition from its first "
                             "line, no marker above it, one line inside it changed between markers")
    parser.add_argument("--definitions", action="store_true",
                        help="with --sources: code files only, each snippet a top-level definition added like its "
                             "neighbour, between two (the next one's header shown after it) or after the last "
                             "(no marker after it), the lines of the one above shown")
    parser.add_argument("--methods", action="store_true",
                        help="as --definitions, but a method added among its siblings in a class (after the last: "
                             "a marker at column 0 after it)")
    parser.add_argument("--imports", action="store_true",
                        help="with --sources: code files only, each snippet an import added beside the file's and "
                             "a line changed in a definition below, shown as --functions shows it")
    parser.add_argument("--other", action="store_true",
                        help="with --sources: files of no language fastapply knows too (a Dockerfile, a .conf), "
                             "merged with no parser, as 'other'")
    parser.add_argument("--known", type=Path, nargs="+", metavar="TASKS",
                        help="merge these task files (eval-suite schema, .jsonl or .jsonl.gz) instead of "
                             "generated edits")
    for form, what in FORMS.items():
        parser.add_argument(f"--{form}", action="store_true", help=f"with --known: {what}, read as the CLI reads it")
    parser.add_argument("--merges", type=Path, help="with --known: write each task's confidence and exactness here")
    parser.add_argument("--against", type=Path, help="with --known: list the tasks whose merge differs from this "
                                                     "earlier --merges file")
    parser.add_argument("--out", type=Path, help=f"JSON written (default {RESULTS.name}, or "
                                                 f"{KNOWN_RESULTS.name} with --known, {SOURCES_RESULTS.name} with "
                                                 f"--sources, in benchmarks/results)")
    args = parser.parse_args()
    if (args.merges or args.against or any(getattr(args, form) for form in FORMS)) and not args.known:
        parser.error("--merges, --against and the forms (" + ", ".join(f"--{form}" for form in FORMS)
                     + ") go with --known")
    if sum(getattr(args, form) for form in FORMS) > 1:
        parser.error("one of " + ", ".join(f"--{form}" for form in FORMS))
    modes = {"blocks": args.blocks, "regions": args.regions, "keys": args.keys, "new-keys": args.new_keys,
             "beside": args.beside, "functions": args.functions, "definitions": args.definitions,
             "methods": args.methods, "imports": args.imports}
    if (any(modes.values()) or args.other) and not args.sources:
        parser.error("--blocks, --regions, --keys, --new-keys, --beside, --functions, --definitions, --methods, "
                     "--imports and --other go with --sources")
    if sum(modes.values()) > 1:
        parser.error("one of --blocks, --regions, --keys, --new-keys, --beside, --functions, --definitions, "
                     "--methods and --imports")
    alone = next((mode for mode, chosen in modes.items() if chosen), None)
    if args.known:
        form = next((form for form in FORMS if getattr(args, form)), None)
        report = run_known(args.known, args.merges, args.against, form)
        out = args.out or (KNOWN_RESULTS.with_name(f"merge-known-{form}.json") if form else KNOWN_RESULTS)
    else:
        report = run(args.edits, args.seed, args.js_share, args.replay, args.sources, alone, args.other)
        out = args.out or {"blocks": BLOCKS_RESULTS, "regions": REGIONS_RESULTS, "keys": KEYS_RESULTS,
                           "new-keys": NEW_KEYS_RESULTS, "beside": BESIDE_RESULTS,
                           "functions": FUNCTIONS_RESULTS, "definitions": DEFINITIONS_RESULTS,
                           "methods": METHODS_RESULTS, "imports": IMPORTS_RESULTS}.get(
            alone, SOURCES_RESULTS if args.sources else RESULTS)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(report, indent=2) + "\n")
    (show_known if args.known else show)(report)


if __name__ == "__main__":
    main()
