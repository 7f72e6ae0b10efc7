"""unigram part (placeholder: being written)."""
