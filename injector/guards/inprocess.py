"""Running a `python -m module` / `python script.py` guard command inside the test's process.

A smoke-training command started as a new interpreter imports torch afresh (about 2 s of CPU)
before it trains for a fraction of that. Run here, it reuses this process's torch and is
watched by the hooks this process already has; what it changes of the process's global state
(working folder, argv, sys.path, random state, default dtype, thread count, grad mode) is put
back afterwards.
"""

from __future__ import annotations

import os
import runpy
import sys
from pathlib import Path

import torch


def run_python(args: list[str], cwd: str | Path) -> int:
    """Run `python *args` (`-m module ...` or `script.py ...`) in this process from `cwd` and
    return its exit code (0 when it returns, the code it exits with otherwise)."""
    if not args or (args[0].startswith("-") and args[0] != "-m") or (args[0] == "-m" and len(args) < 2):
        raise ValueError(f"not a `python -m module` or `python script.py` command: {args}")
    folder = Path(cwd).resolve()
    module = args[1] if args[0] == "-m" else None
    script = None if module else (folder / args[0]).resolve()
    saved_cwd, saved_argv, saved_path = os.getcwd(), sys.argv, list(sys.path)
    saved_dtype, saved_threads, saved_grad = torch.get_default_dtype(), torch.get_num_threads(), torch.is_grad_enabled()
    os.chdir(folder)
    sys.argv = [module or str(script), *args[2 if module else 1 :]]
    sys.path.insert(0, str(folder if module else script.parent))  # type: ignore[union-attr]
    try:
        with torch.random.fork_rng(devices=[]):
            if module:
                runpy.run_module(module, run_name="__main__", alter_sys=True)
            else:
                runpy.run_path(str(script), run_name="__main__")
        return 0
    except SystemExit as exit:
        if exit.code is None or isinstance(exit.code, int):
            return exit.code or 0
        print(exit.code, file=sys.stderr)  # sys.exit("message"), as the interpreter would
        return 1
    finally:
        os.chdir(saved_cwd)
        sys.argv, sys.path[:] = saved_argv, saved_path
        torch.set_default_dtype(saved_dtype)
        torch.set_num_threads(saved_threads)
        torch.set_grad_enabled(saved_grad)
