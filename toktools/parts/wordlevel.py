"""wordlevel part (placeholder: being written)."""
