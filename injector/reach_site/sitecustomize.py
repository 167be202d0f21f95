# Put on PYTHONPATH by trainwreck during a baseline run only: processes the guard starts
# record which project functions they run (see injector/reach.py).
try:
    from injector.reach import start_in_subprocess
except ImportError:  # an interpreter without trainwreck: nothing to record
    pass
else:
    start_in_subprocess()
