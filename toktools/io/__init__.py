"""Files in and out: loading every tokenizer layout, validating it, writing outputs atomically,
the shipped vocabularies and the user cache."""
