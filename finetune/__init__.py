"""Training code for fastapply's apply models: tokenizers and models from scratch, fine-tuning."""
