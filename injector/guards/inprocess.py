"""Running a `python -m module` / `python script.py` guard command inside the test's process.

A smoke-training command started as a new interpreter imports torch afresh (about 2 s of CPU)
before it trains for a fraction of that. Run here, it reuses this process's torch and is
watched by the hooks this process already has; what it changes of the process's global state
(working folder, argv, sys.path, random state, default dtype, thread count, grad mode) is put
back afterwards. The modules it imports stay imported, as a test's own imports do.
"""

from __future__ import annotations

import contextlib
import io
import os
import runpy
import subprocess
import sys
import traceback
from collections.abc import Iterator
from pathlib import Path
from typing import Any

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


@contextlib.contextmanager
def scripts_in_process() -> Iterator[None]:
    """Within the block, `subprocess.run([sys.executable, "script.py" | "-m", "module", ...])`
    runs that Python command in this process (`run_python`) and returns what the subprocess
    would: its exit code, and its printed output where the caller captures it. A fault a
    watcher sees there raises GuardFailure straight out of `subprocess.run`; any other error
    becomes exit code 1 with its traceback on the captured stderr. Other commands, and calls
    with options this cannot honour (stdin, shell, a timeout), start a process as before."""
    original = subprocess.run

    def run(args: Any, *rest: Any, **kwargs: Any) -> Any:
        argv = [str(a) for a in args] if isinstance(args, (list, tuple)) else None
        python = argv is not None and len(argv) > 1 and argv[0] == sys.executable
        plain = not rest and set(kwargs) <= HONOURED and kwargs.get("stdout") in (None, subprocess.PIPE)
        if not (python and plain and argv and (argv[1].endswith(".py") or (argv[1] == "-m" and len(argv) > 2))):
            return original(args, *rest, **kwargs)
        return _run_here(argv, kwargs)

    setattr(subprocess, "run", run)  # noqa: B010 (put back below)
    try:
        yield
    finally:
        setattr(subprocess, "run", original)  # noqa: B010


HONOURED = frozenset(
    {"capture_output", "text", "universal_newlines", "encoding", "cwd", "check", "env", "stdout", "stderr"}
)


def _run_here(argv: list[str], kwargs: dict[str, Any]) -> subprocess.CompletedProcess:
    from injector.guards.errors import GuardFailure

    capture = kwargs.get("capture_output") or kwargs.get("stdout") == subprocess.PIPE
    out, err = io.StringIO(), io.StringIO()
    saved_env = dict(os.environ)
    if kwargs.get("env") is not None:
        os.environ.clear()
        os.environ.update(kwargs["env"])
    try:
        with contextlib.ExitStack() as stack:
            if capture:
                stack.enter_context(contextlib.redirect_stdout(out))
                stack.enter_context(contextlib.redirect_stderr(err))
            try:
                code = run_python(argv[1:], cwd=kwargs.get("cwd") or os.getcwd())
            except GuardFailure:
                raise
            except Exception:
                traceback.print_exc()
                code = 1
    finally:
        os.environ.clear()
        os.environ.update(saved_env)
    text = kwargs.get("text") or kwargs.get("universal_newlines") or kwargs.get("encoding")
    stdout: Any = out.getvalue() if capture else None
    stderr: Any = err.getvalue() if capture else None
    if capture and not text:
        stdout, stderr = stdout.encode(), stderr.encode()
    if kwargs.get("check") and code:
        raise subprocess.CalledProcessError(code, argv, stdout, stderr)
    return subprocess.CompletedProcess(argv, code, stdout, stderr)
