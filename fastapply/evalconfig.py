"""What an eval run is: its engine, policies, model source and options (``EvalConfig``), checked, and
the provenance every result records (fastapply version, git commit, time).

Engines: ``merge`` (the deterministic merge engine), ``auto`` (what ``fastapply FILE`` does with the
default model: a certain merge as it is, else the model drafting from the merge, its answer validated;
one policy, ``fastapply``), ``model`` (a transformers model with each draft
policy, plus ``plain`` = greedy ``model.generate`` and ``prompt-lookup`` = ``generate`` with prompt
lookup; or, with ``server``, an OpenAI-compatible server that drafts as it does, policy ``server``) and
``replay`` (``ReplayTarget``: the reference answer stands in for the model). This module runs nothing.
"""

from __future__ import annotations

import datetime
import importlib.util
import subprocess
from dataclasses import asdict, dataclass, field
from functools import lru_cache
from pathlib import Path

from fastapply.draft import POLICIES
from fastapply.errors import UsageError
from fastapply.judge import JudgeConfig

ENGINES = ("merge", "auto", "model", "replay")
GENERATE_METHODS = ("plain", "prompt-lookup")  # transformers' generate, run beside the loop's policies
REMOTE_POLICY = "server"  # the one policy of a model behind a server: it drafts as it does (from `prediction`)
DEFAULT_POLICIES = {"merge": ("merge",), "auto": ("fastapply",), "replay": ("fastapply", "ngram", "pld", "none"),
                    "model": ("plain", "prompt-lookup", "ngram", "fastapply")}


@dataclass(frozen=True)
class EvalConfig:
    engine: str  # merge, auto, model or replay
    policies: tuple[str, ...] = ()  # draft policies (and generate methods); () = the engine's defaults
    model: str | None = None  # checkpoint path or hub id (model engine; replay takes its tokenizer); with a
    #                           server, the model name sent (None: the first it lists)
    tokenizer: str | None = None  # tokenizer path or hub id for replay; defaults to the model's
    adapter: str | None = None
    device: str = "auto"
    dtype: str = "auto"
    preset: str = "default"
    max_new_tokens: int | None = None  # None: twice the file and the edit plus 256 (and within the model's context);
    #                                    with a server, None lets the server decide
    merge_draft: bool = True  # the fastapply policy (or the server's prediction) drafts the merge engine's candidate
    time_prefill: bool = True  # a local model also times one prefill of prompt + reference answer per task
    stop_refused: bool = False  # a local model's answer is stopped once it is sure to be refused (RefusalWatch)
    focus: bool = True  # the model rewrites the top-level statements around the edit, not the whole file (focus.py)
    judge: JudgeConfig | None = None
    server: str | None = None  # an OpenAI-compatible API base (e.g. http://127.0.0.1:8000/v1) answering for the model
    send_prediction: bool = True  # with a server: send the expected answer as `prediction` (predicted outputs)
    api_key: str | None = field(default=None, repr=False)  # the server's key; never written into results

    @property
    def model_source(self) -> str | None:
        """Where the answers come from, as results record it: the server's URL, else the model."""
        return self.server or self.model

    def resolved(self) -> EvalConfig:
        """This config with the engine's default policies filled in, checked; ``UsageError`` otherwise."""
        if self.engine not in ENGINES:
            raise UsageError(f"unknown engine {self.engine!r}; choose one of: {', '.join(ENGINES)}")
        if self.server is not None:
            return self._resolved_remote()
        policies = self.policies or DEFAULT_POLICIES[self.engine]
        allowed = {"merge": ("merge",), "auto": ("fastapply",), "replay": tuple(POLICIES),
                   "model": (*GENERATE_METHODS, *POLICIES)}[self.engine]
        for policy in policies:
            if policy not in allowed:
                hint = " (plain and prompt-lookup run model.generate: --engine model; replay has none and pld)" \
                    if policy in GENERATE_METHODS else ""
                raise UsageError(f"--draft {policy!r} does not go with --engine {self.engine}; "
                                 f"choose from: {', '.join(allowed)}{hint}")
        if self.stop_refused and self.engine not in ("model", "auto"):
            raise UsageError(f"--stop-refused watches a model's answers: --engine model or auto, not {self.engine}")
        if self.stop_refused and set(policies) & set(GENERATE_METHODS):
            raise UsageError("--stop-refused stops answers in fastapply's decode loop; plain and prompt-lookup "
                             "(model.generate) run whole, so their times would not compare: leave them out "
                             "(--draft fastapply,ngram,pld,none)")
        if self.engine in ("model", "auto") and not self.model:
            raise UsageError(f"--engine {self.engine} needs --model PATH_OR_HUB_ID (or a server: --server URL)")
        if self.engine in ("merge", "auto") and not merge_engine_available():
            raise UsageError(f"--engine {self.engine} needs the merge engine (fastapply.merge), which this install lacks")
        return EvalConfig(**{**asdict(self), "policies": tuple(dict.fromkeys(policies)), "judge": self.judge})

    def _resolved_remote(self) -> EvalConfig:
        if self.engine not in ("model", "auto"):
            raise UsageError(f"a server answers for --engine model and auto only, not --engine {self.engine}")
        if self.policies not in ((), (REMOTE_POLICY,)):
            raise UsageError(f"with a server, the server drafts (from the `prediction` fastapply sends): "
                             f"--draft {REMOTE_POLICY} is the only policy")
        if self.adapter is not None or self.tokenizer is not None:
            raise UsageError("--adapter and --tokenizer are for a local model; a server has its own")
        if self.stop_refused:
            raise UsageError("--stop-refused watches a local model's answers as they are written; a server's "
                             "arrive whole")
        return EvalConfig(**{**asdict(self), "policies": (REMOTE_POLICY,), "judge": self.judge})

    @property
    def focusing(self) -> bool:
        """Whether a model is shown files focused (``focus.py``): results from before focusing, which
        record no ``focus``, were whole files."""
        return self.focus and self.engine in ("model", "auto")

    def options(self) -> dict:
        """What a result records about how it was made (never the judge's or the server's key)."""
        judged = {"judge_url": self.judge.url, "judge_model": self.judge.model} if self.judge else {}
        remote = {"server": self.server, "send_prediction": self.send_prediction} if self.server else {}
        return {name: getattr(self, name) for name in
                ("engine", "model", "tokenizer", "adapter", "device", "dtype", "preset", "max_new_tokens",
                 "merge_draft")} | ({"stop_refused": True} if self.stop_refused else {}) | (
            {"focus": True} if self.focusing else {}) | remote | judged

    def run_key(self) -> dict:
        """The options two runs must share for one to resume the other's results."""
        return {k: v for k, v in self.options().items() if k not in ("judge_url", "judge_model", "device")}


def merge_engine_available() -> bool:
    return importlib.util.find_spec("fastapply.merge") is not None


@lru_cache(maxsize=1)
def git_commit() -> str | None:
    """The commit of the checkout fastapply runs from (``-dirty`` when tracked files changed), or None."""
    root = Path(__file__).resolve().parent.parent
    try:
        head = subprocess.run(["git", "-C", str(root), "rev-parse", "HEAD"], capture_output=True, text=True,
                              timeout=10)
        if head.returncode != 0:
            return None
        dirty = subprocess.run(["git", "-C", str(root), "status", "--porcelain", "--untracked-files=no"],
                               capture_output=True, text=True, timeout=10).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return None
    return head.stdout.strip() + ("-dirty" if dirty else "")


def now() -> str:
    return datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
