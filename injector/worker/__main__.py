"""Entry point of a worker process (started by `injector.campaign.Campaign`)."""

from __future__ import annotations

import json
import os
import signal
import sys
from pathlib import Path

from injector import pytest_config
from injector.worker import forking
from injector.worker.core import Worker
from trainwreck import probe, processes

FRESH = "--fresh: each run imports the guard's tests afresh in its own process"
THREAD_VARIABLES = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS")


def main() -> int:
    plan = json.loads(Path(sys.argv[1]).read_text())
    slot, commands, events = int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
    for fd in (commands, events):
        os.set_inheritable(fd, False)  # processes the guard starts must not hold the campaign's pipes
    processes.become_subreaper()
    signal.signal(signal.SIGTERM, lambda signum, frame: forking.abandon(130))
    signal.signal(signal.SIGINT, lambda signum, frame: forking.abandon(130))
    _prepare_environment(plan, Path(plan["slots"][slot]))
    worker = Worker(plan, slot, commands, events)
    if plan["mode"] == "command":
        worker.serve()
        return 0
    import pytest

    from injector.worker.pytest_plugin import TakeOver

    forking.silence_output()  # the guard's output stays out of the campaign's terminal
    isolation = pytest_config.isolation_args(
        plan.get("pytest_config"), Path(plan["slots"][slot]), Path(plan["scratch"]), plan["pytest_args"]
    )
    # `--calibrate` keeps each failing test's traceback for triage: in pytest's long form every
    # frame quotes its function up to the failing line (the training step's `.detach()` or
    # `no_grad` included), where the default quotes only the failing line of the middle frames;
    # and each test's report ends with what the training probe counted while it ran
    plugins: list[object] = []
    long = []
    if plan.get("keep_logs"):
        from trainwreck import probe_pytest

        long = ["--tb=long"]
        plugins.append(probe_pytest)
    worker.pytest_args = [*isolation, *plan["pytest_args"], *long, "-p", "no:cacheprovider", "-q"]
    worker.pytest_plugins = plugins
    # cold: `--fresh`, or this process is the worker started over (its reason is the argument)
    reason = sys.argv[5] if len(sys.argv) > 5 else (FRESH if plan.get("fresh") else None)
    if reason is not None:
        worker.serve_cold(reason)
        return 0
    pytest.main(worker.pytest_args, plugins=[TakeOver(worker), *plugins])
    return 0


def _prepare_environment(plan: dict, slot: Path) -> None:
    """Run in the slot, import the project from it, never trust or write bytecode, and keep
    to this slot's share of the CPU threads (the baseline too, so numerics match)."""
    os.chdir(slot)
    sys.dont_write_bytecode = True
    os.environ["PYTHONDONTWRITEBYTECODE"] = "1"
    share = str(plan["threads"])
    for name in THREAD_VARIABLES:
        current = os.environ.get(name, "")
        if not current.isdigit() or int(current) > int(share):
            os.environ[name] = share
    roots = [str(slot)] + [str(slot / "src")] * (slot / "src").is_dir()
    sys.path[:0] = roots
    path = os.environ.get("PYTHONPATH")
    os.environ["PYTHONPATH"] = os.pathsep.join(roots + ([path] if path else []))
    if plan.get("keep_logs"):  # `--calibrate`: the training probe counts in this slot's runs
        folder = slot.parent / f"probe-{slot.name}"
        os.environ.update(probe.environment(folder))
        probe.install(folder)


if __name__ == "__main__":
    sys.exit(main())
