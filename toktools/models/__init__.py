"""The three models, one folder each: the model (encoding a word), its trainer, its files and
its compiled kernels.

* :mod:`toktools.models.bpe` — byte-level and classic BPE (GPT-2, RoBERTa) and the merge engine
  WordPiece training shares;
* :mod:`toktools.models.wordpiece` — BERT's greedy longest match and ``vocab.txt``;
* :mod:`toktools.models.unigram` — SentencePiece's Unigram trainer and compiled Viterbi."""
