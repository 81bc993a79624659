"""The shared core every recipe, `make eval` and the studies build on: model loading, data and prompts, generation,
run folders, callbacks, summaries and plots, errors, the live-tensor memory meter and PPO's trainer pieces.

It imports only from the layer below (`rewards`, `tasks`) and never from `recipes`, `eval` or `studies`
(tests/test_layout.py holds it to that).
"""
