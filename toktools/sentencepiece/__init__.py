"""sentencepiece's own files and behaviour in pure Python: ``.model`` reading and writing, the
``tokenizer.json`` conversion, charsmaps, and sentencepiece's encoder."""
