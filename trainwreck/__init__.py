"""Plumbing that `injector` and `triage` share, importing neither.

Errors (`errors`), the command lines' one-line argument errors and `--version` (`arguments`),
markdown that user text cannot break (`markdown`), process trees (`processes`), the GitHub client
(`github`) and the sticky PR comment (`comment`), the training probe (`probe`, `probe_pytest`) and
how hooks reach the processes a run starts (`sites`, `imports`). The direction
is one-way: `trainwreck` imports neither `injector` nor `triage`, `injector` never imports
`triage`, and `triage` may import `injector`; tests/test_layering.py keeps it so.
"""
