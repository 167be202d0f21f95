"""demo_train: a small sequence classifier and its training loop, runnable on CPU in seconds.

Modules: `data` (synthetic ordered dataset and loaders), `model` (a tiny causal transformer),
`train` (the training loop, evaluation and the command line).
"""
