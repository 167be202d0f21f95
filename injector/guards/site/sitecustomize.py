# Put on PYTHONPATH by `injector.guards.watch` while its block runs: Python processes the
# watched code starts (subprocess scripts, torchrun workers, mp.spawn ranks) watch too.
import os

try:
    from injector.guards.children import watch_this_process
except ImportError:  # an interpreter without trainwreck: nothing to watch
    pass
else:
    watch_this_process(os.path.dirname(os.path.abspath(__file__)))
