"""Pretraining inputs from a corpus: MLM masking (80/10/10, whole words, Chinese), NSP, SOP and
packed examples written as Parquet."""
