"""fastapply: apply code edits with a language model, made fast by speculative edits."""

__version__ = "0.1.0"
