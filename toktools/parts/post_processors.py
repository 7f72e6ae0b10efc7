"""post-processors."""
