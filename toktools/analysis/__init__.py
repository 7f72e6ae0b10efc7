"""Looking at tokenizers: segmentation statistics, corpus comparisons, vocabulary reports,
alignment of several tokenizers on one text, and plots."""
