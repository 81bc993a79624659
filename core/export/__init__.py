"""A finished run turned into a model people use: the adapter merged into the base in full precision (`merge`), the
merged model checked against the adapter on the run's held-out problems (`check`), and its model card (`card`)."""
