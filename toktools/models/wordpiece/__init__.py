"""WordPiece: BERT's greedy longest-match model and ``vocab.txt`` (:mod:`.model`), and the
likelihood-scored trainer of the original paper (:mod:`.likelihood_trainer`). The trainer
``tokenizers`` uses is the BPE merge engine (:mod:`toktools.models.bpe.trainer`)."""
