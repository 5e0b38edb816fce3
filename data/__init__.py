"""Builders of fastapply's data: the eval suite and training sets from real code (run as scripts)."""
