"""The shared core every recipe, `make eval` and the studies build on, in rooms that each have one job (lowest
first): `runs` (the run folder and its records), `inputs` (everything checked before a model loads), `logprobs` (the
chunked log-prob path), `training` (what the trainers get on top of TRL's), `evaluation` (scoring completions) and
`report` (what a run says at the end); `errors` and `library_noise` sit under them all.

It imports only from the layer below (`rewards`, `tasks`) and never from `recipes`, `eval` or `studies`; a room
imports only from the rooms below it (tests/test_layout.py holds it to both).
"""
