"""BPE: the merge trainer, merging words with trained merges (one at a time, vectorised, or
compiled), the byte-level symbols and split of GPT-2, and ``vocab.json`` / ``merges.txt``.

Read :mod:`toktools.models.bpe.naive` first: the same training in its plainest form."""
