r"""sonnix, trimmed: some losses and the check that a loss decreases under training."""
