"""The parts a tokenizer is made of, as ``tokenizers`` has them: normaliser → pre-tokeniser →
model → post-processor → decoder. Each part reads and writes its own ``tokenizer.json`` node and
is found through :mod:`toktools.parts.registry` by the node's ``type``."""
