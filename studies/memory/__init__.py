"""Memory per method: the estimator (`make estimate`), its validation against live tensors (`make bench-memory`)
and the GPU bench (`make bench-gpu`)."""
