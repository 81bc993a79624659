"""The grid studies: one engine (`engine`: cells x seeds, each a recipe run, then held-out scoring), its tables and
sentences (`report`), and the four studies on it (`group_size`, `kl`, `length`, `onpolicy`)."""
