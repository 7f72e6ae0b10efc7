"""How work runs on this machine: worker processes, signals, and whether compiled kernels
may be used (and their machine code kept between runs)."""
