"""Unigram (SentencePiece): the trainer, its compiled loops and the compiled Viterbi. The model
part itself is :mod:`toktools.parts.unigram`."""
