# Put on PYTHONPATH by trainwreck while a probed run goes (`injector run --calibrate`, `triage
# watch`): the Python processes the run starts count what trains (see trainwreck/probe.py).
import os

try:
    from trainwreck.probe import start_from_environment
except ImportError:  # an interpreter without trainwreck: nothing to count
    pass
else:
    start_from_environment(os.path.dirname(os.path.abspath(__file__)))
