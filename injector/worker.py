"""The warm worker: pays the guard's start-up once, then forks one child per mutant.

    python -m injector.worker PLAN.json EVENTS_FD

Started by the campaign in a scratch copy of the project. With a pytest guard it starts
one pytest session, imports and collects the tests once, and takes over pytest's run loop:

- the baseline runs in a forked child (so CUDA is never initialised in this process, which
  forks), recording each test's outcome, time, and the project functions it reaches;
- each mutant runs in a forked child in its own process group. If the mutant lies inside a
  function that is already loaded, the child swaps that function's code object for the
  mutated one (every reference to the function sees it) and runs, fastest first, only the
  tests that reach it, stopping at the first failure. Otherwise (code that runs at import,
  a command guard) the child writes the mutant into its slot's private copy of the project
  and runs the guard afresh there.

Each slot (`--jobs N` gives N) has its own copy of the project, so tests that write files
never meet. Results go back to the campaign as JSON lines on EVENTS_FD.
"""

from __future__ import annotations

import gc
import importlib
import json
import linecache
import os
import select
import selectors
import shlex
import signal
import subprocess
import sys
import tempfile
import time
import types
from dataclasses import dataclass, field
from pathlib import Path

from injector import processes, reach
from injector.mutants import Edit, apply_edits
from injector.outcomes import ERROR, KILLED, NO_COVERAGE, SURVIVED, TIMEOUT

TIMEOUT_CONSTANT = 5.0  # seconds added to every mutant's time limit
MESSAGE_LIMIT = 500


@dataclass
class Test:
    """A guard test as the baseline saw it."""

    name: str
    duration: float = 0.0
    outcomes: list[str] = field(default_factory=list)
    reached: set = field(default_factory=set)
    item: object = None  # the pytest item (pytest mode)

    @property
    def usable(self) -> bool:
        """Passed in every baseline run: neither failing, skipped nor flaky."""
        return bool(self.outcomes) and all(o == "passed" for o in self.outcomes)


@dataclass
class Job:
    mutant: dict
    slot: int
    pid: int
    pipe: int
    deadline: float
    started: float
    tests: list[Test]
    written: Path | None = None  # a slot file the child overwrote, restored after it ends


class Worker:
    def __init__(self, plan: dict, events: int) -> None:
        self.plan = plan
        self.events = events
        self.slots = [Path(p) for p in plan["slots"]]
        self.roots = [str(self.slots[0]), *plan.get("extra_roots", [])]
        self.mode = plan["mode"]
        self.tests: list[Test] = []
        self.functions: dict[tuple, list[types.FunctionType]] = {}
        self.startup = 0.0
        self.gpus = int(plan.get("gpus", 0))
        self.parent = os.getppid()
        # The campaign writes to our stdin; pytest's capture points fd 0 at /dev/null, so keep a copy.
        self.commands = os.dup(0)

    # ---- talking to the campaign ----

    def emit(self, event: str, **data: object) -> None:
        line = json.dumps({"event": event, **data}) + "\n"
        try:
            os.write(self.events, line.encode())
        except BrokenPipeError:  # the campaign is gone: stop everything
            _abandon(3)

    # ---- the campaign ----

    def run_reporting_errors(self, items: list | None) -> None:
        """`run`, with any failure of the worker itself reported as one line, not lost."""
        try:
            self.run(items)
        except Exception as error:  # noqa: BLE001 - the campaign shows it and stops
            self.emit("fatal", message=f"the campaign's worker failed: {type(error).__name__}: {error}")

    def run(self, items: list | None) -> None:
        started = time.monotonic()
        if items is not None:
            self.tests = [Test(item.nodeid, item=item) for item in items]
            self._index_functions()
        else:
            self.tests = [Test(self.plan["command"])]
        self.startup = float(self.plan.get("startup", 0.0))
        if not self._baseline():
            return
        self.emit("baseline", tests=len(self.tests), flaky=self._flaky(),
                  duration=sum(t.duration for t in self.tests if t.usable),
                  seconds=time.monotonic() - started)
        self._mutants()
        self.emit("done")
        _abandon(0)  # nothing left to do: skip pytest's session teardown and interpreter shutdown

    def _flaky(self) -> list[str]:
        return [t.name for t in self.tests if len(set(t.outcomes)) > 1]

    def _baseline(self) -> bool:
        repeat = int(self.plan.get("repeat", 1))
        limit = float(self.plan.get("baseline_timeout", 600))
        for run in range(repeat):
            self.emit("baseline_run", run=run + 1, of=repeat)
            result = self._fork_and_wait(self._baseline_child, limit, on_progress=self._warm_up)
            if result is None:
                self.emit("fatal", message=f"the unmutated guard did not finish within {limit:.0f} s "
                                           f"(baseline run {run + 1}); is it hanging?")
                return False
            if "error" in result:
                self.emit("fatal", message=result["error"])
                return False
            for test, record in zip(self.tests, result["tests"]):
                test.outcomes.append(record["outcome"])
                test.duration = max(test.duration, record["duration"])
                test.reached.update(tuple(k) for k in record["reached"])
        failing = [t.name for t in self.tests if t.outcomes and all(o == "failed" for o in t.outcomes)]
        if failing:
            shown = ", ".join(failing[:5]) + (f" and {len(failing) - 5} more" if len(failing) > 5 else "")
            self.emit("fatal", message=f"the unmutated guard fails: {shown}; fix it before a campaign")
            return False
        if not any(t.usable for t in self.tests):
            self.emit("fatal", message="no guard test passed in the baseline (all skipped or flaky)")
            return False
        return True

    def _baseline_child(self, progress) -> dict:
        """Run every test once, recording outcome, time and reach (in a forked child).
        After each test it reports the library modules imported so far (`progress`)."""
        loaded = set(sys.modules)
        roots = tuple(os.path.realpath(r) for r in self.roots)

        def report_modules() -> None:
            new = [name for name, module in list(sys.modules.items()) if name not in loaded and
                   not os.path.realpath(getattr(module, "__file__", None) or "/").startswith(roots)]
            loaded.update(sys.modules)
            if new:
                progress({"modules": new})

        reach_dir = Path(tempfile.mkdtemp(prefix="reach-", dir=self.plan["scratch"]))
        os.environ.update(reach.subprocess_environment(reach_dir, self.roots))
        tracer = reach.Tracer(self.roots)
        tracer.follow_forks(str(reach_dir))  # forked ranks and workers record too
        records = []
        if self.mode == "pytest":
            items = [t.item for t in self.tests]
            for index, item in enumerate(items):
                following = items[index + 1] if index + 1 < len(items) else None
                tracer.take()
                tracer.start()
                started = time.perf_counter()
                outcome = _pytest_outcome(item, following)[0]
                duration = time.perf_counter() - started
                tracer.stop()
                reached = tracer.take() | reach.collect_subprocess_reach(reach_dir)
                records.append({"outcome": outcome, "duration": duration, "reached": sorted(reached)})
                report_modules()
        else:
            started = time.perf_counter()
            code, _ = _run_command(self.plan["command"], self.slots[0])
            duration = time.perf_counter() - started
            reached = reach.collect_subprocess_reach(reach_dir)
            records.append({"outcome": "passed" if code == 0 else "failed", "duration": duration,
                            "reached": sorted(reached)})
        return {"tests": records}

    def _warm_up(self, message: dict) -> None:
        """Import here the libraries the guard imported lazily while it ran (torch imports
        `torch._dynamo` and sympy on the first optimizer step, for example), so that every
        mutant's forked child starts with them instead of paying for them again. It runs
        while the baseline goes on in its child. Project modules are left alone: their
        import-time code is the user's to run."""
        for name in message.get("modules", []):
            if name in sys.modules:
                continue
            try:
                importlib.import_module(name)
            except BaseException:  # noqa: BLE001 - a module that will not import here is skipped
                sys.modules.pop(name, None)

    def _index_functions(self) -> None:
        """Every loaded function of the project, by the key a mutant names it with."""
        roots = tuple(os.path.join(os.path.realpath(r), "") for r in self.roots)
        for obj in gc.get_objects():
            if isinstance(obj, types.FunctionType):
                path = os.path.realpath(obj.__code__.co_filename)
                for root in roots:
                    if path.startswith(root):
                        key = (path[len(root):], obj.__code__.co_qualname, obj.__code__.co_firstlineno)
                        self.functions.setdefault(key, []).append(obj)
                        break

    # ---- mutants ----

    def _mutants(self) -> None:
        queue = self._receive_mutants()
        free = list(range(len(self.slots)))
        jobs: dict[int, Job] = {}
        exited: dict[int, int] = {}
        selector = selectors.DefaultSelector()
        while queue or jobs:
            while queue and free:
                mutant = queue.pop(0)
                tests = self._covering(mutant)
                if not tests:
                    self.emit("outcome", id=mutant["id"], status=NO_COVERAGE, tests_run=0)
                    continue
                job = self._start(mutant, free.pop(0), tests)
                jobs[job.pid] = job
                selector.register(job.pipe, selectors.EVENT_READ, job)
            self._check_parent()
            now = time.monotonic()
            wait = min((j.deadline for j in jobs.values()), default=now) - now
            if jobs:
                selector.select(timeout=max(0.0, min(wait, 0.1)))
            self._collect_exits(jobs, exited)
            for pid, job in list(jobs.items()):
                if pid in exited:
                    result = self._result(job, exited.pop(pid))
                elif time.monotonic() >= job.deadline:
                    processes.kill_tree(job.pid)
                    self._reap(pid, block=True)
                    result = {"status": TIMEOUT, "message": f"no result within {job.deadline - job.started:.1f} s"}
                else:
                    continue
                self._end_leftovers(job, jobs)
                selector.unregister(job.pipe)
                os.close(job.pipe)
                if job.written is not None:
                    job.written.write_text(self._original(job.mutant["file"]))
                del jobs[pid]
                free.append(job.slot)
                self.emit("outcome", id=job.mutant["id"], duration=time.monotonic() - job.started, **result)

    def _receive_mutants(self) -> list[dict]:
        """The campaign sends the mutants once it has made them (the baseline ran meanwhile)."""
        self.emit("ready")
        line = b""
        while not line.endswith(b"\n"):
            chunk = os.read(self.commands, 4096)
            if not chunk:
                _abandon(3)
            line += chunk
        return json.loads(Path(line.decode().strip()).read_text())

    def _collect_exits(self, jobs: dict[int, Job], exited: dict[int, int]) -> None:
        """Reap every exited child: jobs' statuses are kept, adopted orphans are let go."""
        while True:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if pid == 0:
                return
            if pid in jobs:
                exited[pid] = status

    def _end_leftovers(self, job: Job, jobs: dict[int, Job]) -> None:
        """End what the mutant's guard left running: its process group, and any process
        that escaped the group and was re-parented here (the worker is a subreaper)."""
        try:
            os.killpg(job.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        for pid in processes.children(os.getpid()) or []:
            if pid not in jobs:
                processes.kill_tree(pid, grace=0.2)

    def _covering(self, mutant: dict) -> list[Test]:
        """The usable tests that reach the mutant, fastest first."""
        key = reach.mutant_key(mutant["file"], mutant["function"], mutant["function_line"],
                               mutant["in_main"])
        if key[1] == reach.MODULE:  # import-time code: every test imports it
            tests = [t for t in self.tests if t.usable]
        else:
            tests = [t for t in self.tests if t.usable and key in t.reached]
        return sorted(tests, key=lambda t: t.duration)

    def _start(self, mutant: dict, slot: int, tests: list[Test]) -> Job:
        swap = self.mode == "pytest" and self._swappable(mutant)
        budget = sum(t.duration for t in tests) + (0.0 if swap else self.startup)
        limit = float(self.plan.get("timeout_factor", 3.0)) * budget + TIMEOUT_CONSTANT
        written = None if swap else self.slots[slot] / mutant["file"]
        read, write = os.pipe()
        pid = os.fork()
        if pid == 0:  # the child
            os.close(read)
            _child(lambda: self._mutant_child(mutant, slot, tests, swap), write)
        os.close(write)
        try:
            os.setpgid(pid, pid)
        except (PermissionError, ProcessLookupError):
            pass
        now = time.monotonic()
        return Job(mutant, slot, pid, read, now + limit, now, tests, written)

    def _swappable(self, mutant: dict) -> bool:
        return mutant["function"] is not None and not mutant["in_main"] and \
            (mutant["file"], mutant["function"], mutant["function_line"]) in self.functions

    def _mutant_child(self, mutant: dict, slot: int, tests: list[Test], swap: bool) -> dict:
        os.chdir(self.slots[slot])
        if self.gpus > 1:
            os.environ["CUDA_VISIBLE_DEVICES"] = str(slot % self.gpus)
        original = self._original(mutant["file"])
        edits = tuple(Edit(*e) for e in mutant["edits"])
        mutated = apply_edits(original, edits)
        if swap:
            try:
                self._swap(mutant, mutated)
            except (SyntaxError, ValueError, LookupError) as error:
                return {"status": ERROR, "message": f"could not load the mutant: {error}"}
            ran, spent = 0, 0.0
            for index, test in enumerate(tests):
                following = tests[index + 1].item if index + 1 < len(tests) else None
                ran += 1
                started = time.perf_counter()
                outcome, message = _pytest_outcome(test.item, following)
                spent += time.perf_counter() - started
                if outcome == "failed":
                    return {"status": KILLED, "test": test.name, "message": message, "tests_run": ran,
                            "guard_seconds": spent}
            return {"status": SURVIVED, "tests_run": ran, "guard_seconds": spent}
        (self.slots[slot] / mutant["file"]).write_text(mutated)
        started = time.perf_counter()
        if self.mode == "pytest":
            code, output = _run_pytest(self.plan["pytest_options"], [t.name for t in tests], self.slots[slot])
            spent = {"tests_run": len(tests), "guard_seconds": time.perf_counter() - started}
            if code == 0:
                return {"status": SURVIVED, **spent}
            if code == 1:
                test, message = _first_failure(output)
                return {"status": KILLED, "test": test, "message": message, **spent}
            return {"status": ERROR, "message": _last_lines(output) or f"pytest exited with {code}", **spent}
        code, output = _run_command(self.plan["command"], self.slots[slot])
        spent = {"tests_run": 1, "guard_seconds": time.perf_counter() - started}
        if code == 0:
            return {"status": SURVIVED, **spent}
        return {"status": KILLED, "test": self.plan["command"], "message": _failure_line(output), **spent}

    def _swap(self, mutant: dict, mutated: str) -> None:
        """Give the live function the mutated code; every reference to it now runs the mutant."""
        path = str(self.slots[0] / mutant["file"])
        module_code = compile(mutated, path, "exec", dont_inherit=True)
        code = _find_code(module_code, mutant["function"], mutant["function_line"])
        for function in self.functions[(mutant["file"], mutant["function"], mutant["function_line"])]:
            function.__code__ = code  # ValueError if the free variables differ
        lines = mutated.splitlines(keepends=True)
        linecache.cache[path] = (len(mutated), None, lines, path)  # tracebacks show the mutant

    def _original(self, file: str) -> str:
        return (self.slots[0] / file).read_text()

    # ---- processes ----

    def _fork_and_wait(self, work, limit: float, on_progress=None) -> dict | None:
        """Run `work(progress)` in a forked child; its progress messages reach `on_progress`
        here while it runs. Returns its result, or None if it outlived `limit` seconds."""
        read, write = os.pipe()
        pid = os.fork()
        if pid == 0:
            os.close(read)
            _child(lambda: work(lambda message: _send(write, message)), write)
        os.close(write)
        try:
            os.setpgid(pid, pid)
        except (PermissionError, ProcessLookupError):
            pass
        deadline = time.monotonic() + limit
        buffer = b""
        result = None
        with os.fdopen(read, "rb", buffering=0) as pipe:
            while True:
                ready, _, _ = select.select([pipe], [], [], 0.1)
                if ready:
                    chunk = pipe.read(1 << 16)
                    if not chunk:
                        break
                    buffer += chunk
                    *lines, buffer = buffer.split(b"\n")
                    for line in lines:
                        message = json.loads(line)
                        if "progress" in message and on_progress is not None:
                            on_progress(message["progress"])
                        elif "progress" not in message:
                            result = message
                self._check_parent()
                if time.monotonic() > deadline:
                    processes.kill_tree(pid)
                    self._reap(pid, block=True)
                    return None
        status = self._reap(pid, block=True)
        processes.kill_tree(pid, grace=0.2)
        if result is None:
            return {"error": f"the guard crashed the test process ({_describe(status)})"}
        return result

    def _reap(self, pid: int, block: bool = False) -> int | None:
        try:
            done, status = os.waitpid(pid, 0 if block else os.WNOHANG)
        except ChildProcessError:
            return 0
        return status if done else None

    def _check_parent(self) -> None:
        if os.getppid() != self.parent:  # the campaign was killed: do not run on alone
            _abandon(3)

    def _result(self, job: Job, status: int) -> dict:
        data = b""
        os.set_blocking(job.pipe, False)
        try:
            while chunk := os.read(job.pipe, 1 << 16):
                data += chunk
        except BlockingIOError:
            pass
        try:
            return json.loads(data)
        except ValueError:
            return {"status": ERROR, "message": f"the test process crashed ({_describe(status)})"}


def _abandon(code: int) -> None:
    """End every process this worker started (mutants, the guard's children) and leave now."""
    for pid in processes.descendants(os.getpid()):
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    os._exit(code)


def _child(work, write: int) -> None:
    """Run `work` in a forked child, send its result, and leave without cleanup."""
    code = 0
    try:
        os.setpgid(0, 0)
        log = os.open(os.devnull, os.O_WRONLY)
        os.dup2(log, 1)
        os.dup2(log, 2)
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        result = work()
    except BaseException as error:  # noqa: BLE001 - anything the guard raises is a result
        result = {"status": ERROR, "error": f"{type(error).__name__}: {error}",
                  "message": f"{type(error).__name__}: {error}"[:MESSAGE_LIMIT]}
        code = 1
    try:
        _send(write, result, progress=False)
    finally:
        os._exit(code)


def _send(fd: int, message: dict, progress: bool = True) -> None:
    """One JSON line from a forked child to the worker (progress, or the final result)."""
    data = (json.dumps({"progress": message} if progress else message) + "\n").encode()
    while data:
        data = data[os.write(fd, data):]


def _pytest_outcome(item, following) -> tuple[str, str | None]:
    """Run one pytest item in this process: ('passed'|'failed'|'skipped', first failure line)."""
    from _pytest.runner import runtestprotocol

    reports = runtestprotocol(item, log=False, nextitem=following)
    for report in reports:
        if report.failed:
            return "failed", _report_message(report)
    if any(r.skipped for r in reports):
        return "skipped", None
    return "passed", None


def _report_message(report) -> str:
    crash = getattr(report.longrepr, "reprcrash", None)
    if crash is not None and crash.message:
        text = crash.message
    else:
        text = str(report.longrepr)
    first = next((line for line in text.splitlines() if line.strip()), "failed")
    return first.strip()[:MESSAGE_LIMIT]


def _find_code(module_code: types.CodeType, qualname: str, first_line: int) -> types.CodeType:
    stack = [module_code]
    while stack:
        code = stack.pop()
        for const in code.co_consts:
            if isinstance(const, types.CodeType):
                if const.co_qualname == qualname and const.co_firstlineno == first_line:
                    return const
                stack.append(const)
    raise LookupError(f"{qualname} (line {first_line}) not found in the mutated module")


def _run_pytest(args: list[str], tests: list[str], cwd: Path) -> tuple[int, str]:
    command = [sys.executable, "-m", "pytest", *args, "-x", "-q", "-rf", "-p", "no:cacheprovider", *tests]
    result = subprocess.run(command, cwd=cwd, capture_output=True, text=True, errors="replace",
                            env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"})
    return result.returncode, result.stdout + result.stderr


def _run_command(command: str, cwd: Path) -> tuple[int, str]:
    result = subprocess.run(shlex.split(command), cwd=cwd, capture_output=True, text=True,
                            errors="replace", env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"})
    return result.returncode, result.stdout + result.stderr


def _first_failure(output: str) -> tuple[str | None, str]:
    for line in output.splitlines():
        if line.startswith("FAILED "):
            test, _, message = line[len("FAILED "):].partition(" - ")
            return test.strip(), (message.strip() or "failed")[:MESSAGE_LIMIT]
    return None, _failure_line(output)


def _failure_line(output: str) -> str:
    lines = [line.strip() for line in output.splitlines() if line.strip()]
    for line in reversed(lines):
        if "Error" in line or "error" in line or "assert" in line or "FAILED" in line:
            return line[:MESSAGE_LIMIT]
    return (lines[-1] if lines else "the guard failed")[:MESSAGE_LIMIT]


def _last_lines(output: str) -> str:
    lines = [line.strip() for line in output.splitlines() if line.strip()]
    return " | ".join(lines[-2:])[:MESSAGE_LIMIT]


def _describe(status: int | None) -> str:
    if status is None:
        return "unknown status"
    if os.WIFSIGNALED(status):
        return f"killed by {signal.Signals(os.WTERMSIG(status)).name}"
    return f"exit code {os.WEXITSTATUS(status)}"


class _Plugin:
    """Takes over pytest's run loop once the tests are collected."""

    def __init__(self, worker: Worker) -> None:
        self.worker = worker
        self.errors: list[str] = []

    def pytest_collectreport(self, report) -> None:
        if report.failed:
            self.errors.append(f"{report.nodeid or 'collection'}: {_report_message(report)}")

    def pytest_runtestloop(self, session) -> bool:
        if self.errors:
            self.worker.emit("fatal", message="the guard's tests do not import: " + self.errors[0])
        elif not session.items:
            self.worker.emit("fatal", message="the guard collected no tests")
        else:
            self.worker.plan["startup"] = time.monotonic() - self.worker.plan["started"]
            self.worker.run_reporting_errors(session.items)
        return True


def main() -> int:
    plan = json.loads(Path(sys.argv[1]).read_text())
    events = int(sys.argv[2])
    plan["started"] = time.monotonic()
    processes.become_subreaper()
    worker = Worker(plan, events)

    signal.signal(signal.SIGTERM, lambda signum, frame: _abandon(130))
    signal.signal(signal.SIGINT, lambda signum, frame: _abandon(130))
    os.chdir(plan["slots"][0])
    sys.path.insert(0, plan["slots"][0])
    sys.dont_write_bytecode = True
    if plan["mode"] == "command":
        worker.run_reporting_errors(None)
        return 0
    import pytest

    # Keep the guard's output out of the campaign's terminal; results travel on EVENTS_FD.
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 1)
    pytest.main([*plan["pytest_args"], "-p", "no:cacheprovider", "-q"], plugins=[_Plugin(worker)])
    return 0


if __name__ == "__main__":
    sys.exit(main())
