"""Generated per-code-point tables measured from ``tokenizers`` (see ``scripts/gen_*``). Do not
edit by hand."""
