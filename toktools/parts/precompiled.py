"""precompiled part (placeholder: being written)."""
