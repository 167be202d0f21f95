"""trainwreck's injector: mutation testing for PyTorch training code.

It turns the fault catalog (`injector.catalog`) into concrete mutants of a project's own
training code (`injector.mutants`), one operator per catalogued fault (`injector.operators`).
"""

__version__ = "0.1.0"
