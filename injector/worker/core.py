"""One worker: a warm process for one job slot that runs the campaign's commands.

A campaign starts one worker per slot, each in its own scratch copy of the project, so every
path a test computes (`Path(__file__).parent / "train.py"`) names that slot's files. A worker
pays the guard's start-up once (imports torch, collects the pytest tests, or imports what a
smoke-training script imports) and then, for each command, forks a child:

- the baseline child runs every test in collection order, recording per test its outcome,
  time, and the project lines it runs (in forked ranks and started processes too);
- a mutant's child runs with the mutant written into the slot's file (so processes the guard
  starts, however they start, import it) and, where the mutated function is already loaded
  here, with the live function's code swapped for the mutated code as well. Code that ran at
  import in this process cannot be swapped: such a mutant runs the guard afresh.

After each mutant the slot's file gets its original text back (from the campaign's copy of the
sources, never read back from the slot) and whatever the guard left running is ended.
"""

from __future__ import annotations

import ast
import contextlib
import gc
import importlib
import importlib.util
import json
import linecache
import os
import shutil
import sys
import tempfile
import time
import types
import warnings
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, NoReturn

from injector import protocol, pytest_config, reach, scratch
from injector.mutants import Edit, apply_edits
from injector.outcomes import ERROR, KILLED, SURVIVED, TIMEOUT
from injector.protocol import Result
from injector.worker import forking, guards
from injector.worker.output import bounded_log, collection_problem, failure_line, first_failure, last_lines
from trainwreck import probe

COLLECTION_LIMIT = 600.0  # seconds a cold worker's first collection of the tests may take
ORDER_NOTE = "the fastest-first test order fails on the unmutated code too, so the tests ran in collection order"


@dataclass
class SwapPlan:
    """The live functions to give new code for one mutant (empty: nothing live to swap)."""

    pairs: list[tuple[types.FunctionType, types.CodeType]] = field(default_factory=list)
    path: str = ""


class Worker:
    def __init__(self, plan: dict, slot_index: int, commands: int, events: int) -> None:
        self.plan = plan
        self.slot = Path(plan["slots"][slot_index])
        self.index = slot_index
        self.user_root = plan["user_root"]
        self.roots = [str(self.slot), self.user_root]
        self.mode = plan["mode"]
        self.commands, self.events = commands, events
        self.threads = int(plan["threads"])
        self.factor = float(plan["timeout_factor"])
        self.started = time.monotonic()
        self.startup = 0.0
        self.items: dict[str, object] = {}
        self.order: list[str] = []
        self.sources: dict[str, str] = {}
        self.collection: tuple[str, ...] = ()
        self.collection_limit = 0.0
        self.functions: dict[FunctionKey, list[types.FunctionType]] = {}
        self.loaded_files: set[str] = set()
        self.command = guards.PythonCommand.parse(plan["command"]) if plan.get("warm") else None
        self.keep_logs = bool(plan.get("keep_logs"))  # `--calibrate`: results carry the guard's output
        self.parent = os.getppid()
        self._buffer = b""
        self.tracer: reach.Tracer | None = None  # set in the baseline child only
        self.fixture_reach: dict[str, reach.Reach] = {}
        self.pytest_args: list[str] = []  # how the guard's tests are collected (pytest mode)
        self.pytest_plugins: list[object] = []
        self.cold: str | None = None  # why each child collects the tests itself
        self.lazy_modules: list[str] = []  # libraries the baseline's child imported

    # ---- talking to the campaign ----

    def emit(self, message: protocol.Message) -> None:
        data = protocol.encode(message)
        try:
            while data:
                data = data[os.write(self.events, data) :]
        except BrokenPipeError:
            self.leave_abandoned()

    def fatal(self, message: str) -> NoReturn:
        self.emit(protocol.Fatal(message))
        forking.abandon(0)

    def next_command(self) -> protocol.Message:
        while b"\n" not in self._buffer:
            chunk = os.read(self.commands, 1 << 16)
            if not chunk:
                self.leave_abandoned()
            self._buffer += chunk
        line, self._buffer = self._buffer.split(b"\n", 1)
        return protocol.decode(line)

    def still_wanted(self) -> None:
        if os.getppid() != self.parent:
            self.leave_abandoned()

    def leave_abandoned(self) -> None:
        """The campaign is gone (killed): end everything and remove the scratch folder."""
        shutil.rmtree(self.plan["scratch"], ignore_errors=True)
        forking.abandon(3)

    # ---- serving ----

    def serve(self, items: list | None = None, startup: float | None = None) -> None:
        self.startup = startup if startup is not None else time.monotonic() - self.started
        if items is not None:
            self.items = {item.nodeid: item for item in items}
            self.order = [item.nodeid for item in items]
            self._index_project()
        else:
            self.order = [self.plan["command"]]
            if self.command is not None:
                self._warm_command_imports()
        self._loop()

    def restart_cold(self, reason: str) -> NoReturn:
        """Start this worker over as a cold one (the same process, pipes and slot)."""
        for fd in (self.commands, self.events):
            os.set_inheritable(fd, True)
        argv = [sys.executable, "-m", "injector.worker", *sys.argv[1:5], reason]
        os.execv(sys.executable, argv)

    def serve_cold(self, reason: str) -> None:
        """Serve with no project module and no CUDA here: the children collect the tests."""
        self.cold = reason
        with contextlib.suppress(ImportError):
            importlib.import_module("torch")  # the common cost; importing torch starts no CUDA

        def collect(progress) -> dict:
            self._child_prologue()
            forking.silence_output()
            return self._collected(lambda errors: {"order": list(self.items), "errors": errors})

        finished = forking.run_in_child(collect, COLLECTION_LIMIT, still_wanted=self.still_wanted)
        found = finished.result or {}
        if finished.timed_out or "order" not in found:
            self.fatal(f"the guard's tests could not be collected ({found.get('error') or finished.describe()})")
        if (problem := collection_problem(found["errors"], len(found["order"]))) is not None:
            self.fatal(problem)
        self.order = list(found["order"])
        self.startup = time.monotonic() - self.started
        self._loop()

    def _collected(self, hand) -> dict:
        """In a cold worker's child: collect the guard's tests here, as pytest would, then
        return `hand(collection errors)` with `self.items` set."""
        import pytest

        from injector.worker.pytest_plugin import TakeOver

        box: dict[str, dict] = {}

        def take(items: list, errors: list[str]) -> None:
            self.items = {item.nodeid: item for item in items}
            box["result"] = hand(errors)

        code = pytest.main(self.pytest_args, plugins=[TakeOver(self, take), *self.pytest_plugins])
        return box.get("result") or {"errors": [f"pytest stopped before running any test (exit {int(code)})"]}

    def _loop(self) -> None:
        self._limit_threads()
        self.snapshot = scratch.Snapshot(self.slot, Path(self.user_root))
        self.emit(protocol.Ready(tuple(self.order), self.startup, self.cold))
        while True:
            command = self.next_command()
            if isinstance(command, protocol.Stop):
                forking.abandon(0)
            elif isinstance(command, protocol.Prepare):
                prepared = json.loads(Path(command.path).read_text())
                self.sources = prepared["sources"]
                self.collection = tuple(prepared["collection"])
                self.collection_limit = float(prepared["collection_limit"])
            elif isinstance(command, protocol.Warm):
                self._import_libraries(command.modules)
            elif isinstance(command, protocol.Baseline):
                self._baseline(command)
            elif isinstance(command, protocol.Run):
                started = time.monotonic()
                result = self._run(command)
                self.emit(replace(result, duration=round(time.monotonic() - started, 3)))

    # ---- the baseline ----

    def _baseline(self, command: protocol.Baseline) -> None:
        records: dict[str, dict] = {
            name: {"outcomes": [], "duration": 0.0, "reach": reach.Reach(), "writes_state": False, "message": None}
            for name in self.order
        }
        for _ in range(command.repeat):
            finished = forking.run_in_child(
                self._baseline_child,
                command.limit,
                on_progress=self._on_baseline_progress,
                still_wanted=self.still_wanted,
            )
            self.snapshot.restore()
            self._import_libraries(self.lazy_modules)
            self.lazy_modules.clear()
            if finished.timed_out:
                self.fatal(f"the unmutated guard did not finish within {command.limit:.0f} s; is it hanging?")
            if finished.result is None or "tests" not in finished.result:
                error = (finished.result or {}).get("error")
                self.fatal(f"the guard crashed the test process ({error or finished.describe()})")
            for name, record in zip(self.order, finished.result["tests"], strict=False):
                records[name]["outcomes"].append(record["outcome"])
                records[name]["duration"] = max(records[name]["duration"], record["duration"])
                records[name]["reach"].update(reach.Reach.from_json(record["reach"]))
                records[name]["writes_state"] |= record["writes_state"]
                records[name]["message"] = records[name]["message"] or record["message"]
        self.emit(
            protocol.BaselineDone(
                tuple(
                    protocol.TestRecord(
                        name,
                        tuple(r["outcomes"]),
                        round(r["duration"], 4),
                        tuple(sorted(r["reach"].lines)),
                        tuple(sorted(r["reach"].scripts)),
                        r["writes_state"],
                        r["message"],
                    )
                    for name, r in records.items()
                )
            )
        )

    def _on_baseline_progress(self, message: dict) -> None:
        modules = tuple(message.get("modules", ()))
        if modules:
            self.lazy_modules.extend(modules)  # imported here once the baseline's child is done
            self.emit(protocol.Modules(modules))

    def _baseline_child(self, progress) -> dict:
        """Every test once, in collection order: outcome, time and reach (in a forked child)."""
        self._child_prologue()
        if self.cold is None:
            return self._baseline_records(progress)
        forking.silence_output()

        def hand(errors: list[str]) -> dict:
            if (problem := collection_problem(errors, len(self.items))) is not None:
                return {"error": problem}
            return self._baseline_records(progress)

        return self._collected(hand)

    def _baseline_records(self, progress) -> dict:
        known = set(sys.modules)

        def report_modules() -> None:
            new = [
                name
                for name in list(sys.modules)
                if name not in known and not self._is_project_module(sys.modules.get(name))
            ]
            known.update(sys.modules)
            if new:
                progress({"modules": new})

        reach_dir = Path(tempfile.mkdtemp(prefix="reach-", dir=self.plan["scratch"]))
        os.environ.update(reach.subprocess_environment(reach_dir, self.roots))
        tracer = reach.Tracer(self.roots)
        tracer.follow_forks(str(reach_dir))
        records: list[dict[str, Any]] = []
        if self.mode == "pytest":
            forking.silence_output()
            items = [self.items[name] for name in self.order]
            self.tracer = tracer  # the plugin records what shared fixtures run (see shared_fixture)
            state = self._shared_state()
            for index, item in enumerate(items):
                following = items[index + 1] if index + 1 < len(items) else None
                tracer.take()
                tracer.start()
                started = time.perf_counter()
                outcome, message = guards.item_outcome(item, following)
                duration = time.perf_counter() - started
                tracer.stop()
                found = tracer.take()
                found.update(reach.collect_subprocess_reach(reach_dir))
                after = self._shared_state()
                records.append(
                    {
                        "outcome": outcome,
                        "duration": duration,
                        "reach": found,
                        "writes_state": after != state,
                        "message": message,
                    }
                )
                state = after
                report_modules()
            # A test that uses a fixture shared across tests depends on what that fixture ran,
            # in whichever test it was set up.
            for item, record in zip(items, records, strict=False):
                for name in getattr(item, "fixturenames", ()):
                    record["reach"].update(self.fixture_reach.get(name, reach.Reach()))
                record["reach"] = record["reach"].to_json()
        else:
            started = time.perf_counter()
            if self.command is not None:
                guards.redirect_output(self.slot.parent / f"baseline-{self.index}.log")
                self._forget_project_modules()
                tracer.start()
                code = self.command.run_here(self.slot)
                tracer.stop()
                found = tracer.take()
                output = (self.slot.parent / f"baseline-{self.index}.log").read_text(errors="replace")
            else:
                code, output = guards.run_fresh(self.plan["argv"], self.slot)
                found = reach.Reach()
            duration = time.perf_counter() - started
            found.update(reach.collect_subprocess_reach(reach_dir))
            records.append(
                {
                    "outcome": "passed" if code == 0 else "failed",
                    "duration": duration,
                    "reach": found.to_json(),
                    "writes_state": False,
                    "message": None if code == 0 else first_failure(output)[1],
                }
            )
            report_modules()
        return {"tests": records}

    def shared_fixture(self, name: str):
        """Around the set-up of a fixture shared across tests (class, module or session
        scope) in the baseline: what it runs is recorded under its name as well."""
        tracer = self.tracer
        if tracer is None:
            yield
            return
        saved = (tracer.reach, tracer._seen)
        tracer.reach, tracer._seen = reach.Reach(), {}
        try:
            yield
        finally:
            ran = tracer.reach
            tracer.reach, tracer._seen = saved
            tracer.reach.update(ran)
            self.fixture_reach.setdefault(name, reach.Reach()).update(ran)

    def _shared_state(self) -> list:
        """A fingerprint of the project's module-level values: a test that changes it leaves
        state behind for the tests after it."""
        found = []
        for module_name, module in list(sys.modules.items()):
            if not self._is_project_module(module):
                continue
            for name, value in list(vars(module).items()):
                if name.startswith("__") or isinstance(value, (types.ModuleType, types.FunctionType, type)):
                    continue
                found.append((module_name, name, id(value), _shallow(value)))
        return found

    # ---- mutants ----

    def _run(self, command: protocol.Run) -> Result:
        spec = command.mutant
        original = self.sources[spec.file]
        mutated = apply_edits(original, tuple(Edit(*e) for e in spec.edits))
        try:
            compile(mutated, str(self.slot / spec.file), "exec", dont_inherit=True)
        except (SyntaxError, ValueError) as error:
            return Result(spec.id, ERROR, message=f"the mutant does not compile: {error}")
        result = self._attempt(spec, original, mutated, command.tests, command.limit)
        if result.status != KILLED or self._same_as_collection(command.tests, result.tests_run):
            return result
        known, failing = command.clean_prefix or 0, command.clean_failing
        ran = result.tests_run
        if ran > known and (failing is None or ran < failing):
            # Run just the tests up to this kill, in this order, on the unmutated code.
            passed = self._clean_prefix(command.tests[:ran], command.limit)
            if passed == ran:
                known = ran
            else:
                failing = passed + 1
        if ran <= known:  # the failing test passes on the original in this order
            return replace(result, clean_prefix=known, clean_failing=failing)
        again = self._attempt(spec, original, mutated, self.collection, self.collection_limit)
        return replace(again, note=ORDER_NOTE, clean_prefix=known, clean_failing=failing)

    def _same_as_collection(self, tests: tuple[str, ...], ran: int) -> bool:
        """The tests that ran are the guard's first tests in collection order (as a full run
        of the guard runs them), so the baseline already shows they pass unmutated."""
        return list(tests[:ran]) == self.order[:ran]

    def _clean_prefix(self, tests: tuple[str, ...], limit: float) -> int:
        """How many of `tests`, in this order, pass on the unmutated code."""

        def count(errors: list[str]) -> dict:
            if errors:
                return {"clean": 0}
            sequence = guards.run_items([self.items[name] for name in tests])
            return {"clean": sequence.ran - 1 if sequence.failed else sequence.ran}

        def work(progress) -> dict:
            self._child_prologue()
            forking.silence_output()
            return count([]) if self.cold is None else self._collected(count)

        if self.cold is not None:
            limit += self.factor * self.startup
        finished = forking.run_in_child(work, limit, still_wanted=self.still_wanted)
        self.snapshot.restore()
        if finished.result is None or "clean" not in finished.result:
            return 0
        return int(finished.result["clean"])

    def _attempt(
        self, spec: protocol.MutantSpec, original: str, mutated: str, tests: tuple[str, ...], limit: float
    ) -> Result:
        """Run the guard once against the mutant; the slot is restored afterwards."""
        swap = None
        warm = True
        if self.mode == "pytest":
            if spec.function is not None and not spec.in_main:
                swap = self._swap_plan(spec, original, mutated)
                if swap is None and spec.file in self.loaded_files:
                    warm = False  # loaded here, but nothing live to swap: only a fresh import sees it
            elif not spec.in_main and spec.file in self.loaded_files:
                warm = False  # code that ran at import in this process
        else:
            warm = self.command is not None
        if not warm or self.cold is not None:
            limit += self.factor * self.startup
        try:
            path = scratch.write_source(self.slot, spec.file, mutated)
        except (OSError, scratch.ScratchError) as error:
            return Result(spec.id, ERROR, message=f"cannot write the mutant into the scratch copy: {error}")
        try:
            finished = forking.run_in_child(
                lambda progress: self._mutant_child(spec, mutated, tests, swap, warm, path),
                limit,
                still_wanted=self.still_wanted,
            )
        finally:
            scratch.write_source(self.slot, spec.file, original)
            self.snapshot.restore(keep=(spec.file,))
            linecache.checkcache()
        if finished.timed_out:
            return Result(
                spec.id,
                TIMEOUT,
                message=f"no result within {limit:.1f} s",
                tests_run=len(tests),
                log=self._timed_out_log(warm),
            )
        data = finished.result
        if data is None or "status" not in data:
            return Result(spec.id, ERROR, message=f"the test process crashed ({finished.describe()})")
        return Result(
            spec.id,
            data["status"],
            test=data.get("test"),
            message=data.get("message"),
            tests_run=int(data.get("tests_run", 0)),
            guard_seconds=round(float(data.get("guard_seconds", 0.0)), 3),
            log=data.get("log"),
        )

    def _timed_out_log(self, warm: bool) -> str | None:
        """What a warm command guard printed before its time ran out (under `--calibrate`);
        other guards' output dies with the process that held it."""
        if not (self.keep_logs and warm and self.mode == "command" and self.command is not None):
            return None
        try:
            output = (self.slot.parent / f"mutant-{self.index}.log").read_text(errors="replace")
        except OSError:
            return None
        output = self._with_probe(output)
        return bounded_log(output) if output else None

    def _with_probe(self, output: str) -> str:
        """A command guard's output and, under `--calibrate`, the training probe's line about
        its run (pytest guards get theirs in each test's report)."""
        folder = probe.folder()
        counts = probe.collect(folder) if self.keep_logs and folder is not None else None
        if counts is None or counts.empty:
            return output
        separator = "\n" if output and not output.endswith("\n") else ""
        return f"{output}{separator}{counts.line()}\n"

    def _mutant_child(
        self,
        spec: protocol.MutantSpec,
        mutated: str,
        tests: tuple[str, ...],
        swap: SwapPlan | None,
        warm: bool,
        path: Path,
    ) -> dict:
        self._child_prologue()
        folder = probe.folder()
        if self.keep_logs and folder is not None:
            probe.clear(folder)  # what the baseline or the mutant before counted is not this run's
        if self.mode == "pytest" and warm:
            forking.silence_output()
            if swap is not None:
                try:
                    for function, new_code in swap.pairs:
                        function.__code__ = new_code  # ValueError if the closure's variables differ
                except ValueError as error:
                    return {"status": ERROR, "message": f"could not load the mutant: {error}"}
                linecache.cache[swap.path] = (len(mutated), None, mutated.splitlines(keepends=True), swap.path)
            watch = guards.ImportWatch(path)
            watch.install()
            if self.cold is None:
                return self._warm_items(tests, watch, [])
            return self._collected(lambda errors: self._warm_items(tests, watch, errors))
        started = time.perf_counter()
        if self.mode == "pytest":
            forking.silence_output()
            isolation = pytest_config.isolation_args(
                self.plan.get("pytest_config"), self.slot, Path(self.plan["scratch"]), self.plan["pytest_options"]
            )
            options = [*isolation, *self.plan["pytest_options"]]
            if self.keep_logs:
                options += ["-p", "trainwreck.probe_pytest"]
            code, output = guards.run_fresh(guards.pytest_argv(options, list(tests)), self.slot)
            spent = {"tests_run": len(tests), "guard_seconds": time.perf_counter() - started}
            if code == 0:
                return {"status": SURVIVED, **spent}
            if code == 1:
                test, message = first_failure(output)
                return {"status": KILLED, "test": test, "message": message, **spent, **self._kept(output)}
            return {
                "status": ERROR,
                "message": last_lines(output) or f"pytest exited with {code}",
                **spent,
                **self._kept(output),
            }
        if self.command is not None:
            log = self.slot.parent / f"mutant-{self.index}.log"
            guards.redirect_output(log)
            self._forget_project_modules()
            code = self.command.run_here(self.slot)
            output = self._with_probe(log.read_text(errors="replace"))
        else:
            forking.silence_output()
            code, output = guards.run_fresh(self.plan["argv"], self.slot)
            output = self._with_probe(output)
        spent = {"tests_run": 1, "guard_seconds": time.perf_counter() - started}
        if code == 0:
            return {"status": SURVIVED, **spent}
        return {
            "status": KILLED,
            "test": self.plan["command"],
            "message": failure_line(output),
            **spent,
            **self._kept(output),
        }

    def _warm_items(self, tests: tuple[str, ...], watch: guards.ImportWatch, errors: list[str]) -> dict:
        """Run the mutant's tests in this child, from the items collected here or in the worker;
        `errors`: what collecting them here raised (a cold worker's child)."""
        if errors:
            # pytest would stop here too: a failure of the guard, unless the mutant's own file
            # does not import
            if watch.failure:
                return {"status": ERROR, "message": f"the mutant does not import: {watch.failure}", "tests_run": 0}
            return {"status": KILLED, "test": None, "message": errors[0], "tests_run": 0, "guard_seconds": 0.0}
        transcript: list[str] | None = [] if self.keep_logs else None
        # a cold child collected afresh: a test the mutant removed is not run, as pytest would not
        items = [self.items[name] for name in tests if name in self.items]
        sequence = guards.run_items(items, transcript=transcript)
        kept = self._kept("".join(transcript or ()))
        if sequence.failed and watch.failure:
            return {
                "status": ERROR,
                "message": f"the mutant does not import: {watch.failure}",
                "tests_run": sequence.ran,
                "guard_seconds": sequence.seconds,
                **kept,
            }
        if sequence.failed:
            return {
                "status": KILLED,
                "test": sequence.failed,
                "message": sequence.message,
                "tests_run": sequence.ran,
                "guard_seconds": sequence.seconds,
                **kept,
            }
        return {"status": SURVIVED, "tests_run": sequence.ran, "guard_seconds": sequence.seconds}

    def _kept(self, output: str) -> dict:
        """The guard's output as a result keeps it: only under `--calibrate`, and bounded."""
        return {"log": bounded_log(output)} if self.keep_logs and output else {}

    # ---- swapping code in place ----

    def _swap_plan(self, spec: protocol.MutantSpec, original: str, mutated: str) -> SwapPlan | None:
        """Which live functions of the file get which mutated code objects; None if the
        changed code has no live function here (nothing in this process would run it)."""
        live = {key: fns for key, fns in self.functions.items() if key[0] == spec.file}
        if not live:
            return None
        path = live[next(iter(live))][0].__code__.co_filename
        try:
            before = _code_objects(compile(original, path, "exec", dont_inherit=True))
            after = _code_objects(compile(mutated, path, "exec", dont_inherit=True))
        except (SyntaxError, ValueError):
            return None
        plan = SwapPlan(path=path)
        for key, old in before.items():
            new = after.get(key)
            if new is None or _same_code(old, new):
                continue
            for function in live.get(function_key(spec.file, old), []):
                plan.pairs.append((function, new))
        return plan if plan.pairs else None

    # ---- the process ----

    def _index_project(self) -> None:
        """Every loaded project function, by (file, qualname, first line), and the files
        whose modules are loaded (their import-time code has already run here)."""
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # touching lazy module attributes can warn
            objects = [obj for obj in gc.get_objects() if isinstance(obj, types.FunctionType)]
        for obj in objects:
            relative = self._relative(obj.__code__.co_filename)
            if relative is not None:
                self.functions.setdefault(function_key(relative, obj.__code__), []).append(obj)
        for module in list(sys.modules.values()):
            relative = self._relative(getattr(module, "__file__", None) or "")
            if relative is not None:
                self.loaded_files.add(relative)

    def _relative(self, filename: str) -> str | None:
        if not filename or not os.path.isabs(filename):
            return None  # "<string>", or a name a library made up (torch.ops has "_ops.py")
        path = os.path.realpath(filename)
        for root in self.roots:
            prefix = os.path.join(os.path.realpath(root), "")
            if path.startswith(prefix):
                return path[len(prefix) :].replace(os.sep, "/")
        return None

    def _is_project_module(self, module) -> bool:
        return self._relative(getattr(module, "__file__", None) or "") is not None

    def _forget_project_modules(self) -> None:
        """Drop project modules from this (child) process, so the guard imports them afresh
        from the slot's files, as a new interpreter would."""
        for name, module in list(sys.modules.items()):
            if self._is_project_module(module):
                del sys.modules[name]

    def _import_libraries(self, names) -> None:
        """Import library modules here, so that forked children start with them (never
        project modules: their import-time code belongs to each mutant's run; and nothing in a
        cold worker). Where a GPU may be used, a child imports them first: one that starts CUDA
        when imported (some query the device to pick their kernels) is left to the children."""
        if self.cold is not None:
            return
        wanted = []
        for name in names:
            if name in sys.modules:
                continue
            try:
                spec = importlib.util.find_spec(name.split(".")[0])
            except (ImportError, ValueError):
                continue
            if (
                spec is None
                or (spec.origin and self._relative(spec.origin) is not None)
                or any(self._relative(p) is not None for p in (spec.submodule_search_locations or ()))
            ):
                continue
            wanted.append(name)
        if wanted and self.plan.get("gpus") and not self._imports_leave_cuda_alone(wanted):
            return
        for name in wanted:
            try:
                importlib.import_module(name)
            except BaseException:
                sys.modules.pop(name, None)

    def _imports_leave_cuda_alone(self, names: list[str]) -> bool:
        """Whether importing `names` (in a child) leaves CUDA unstarted."""

        def probe(progress) -> dict:
            self._child_prologue()
            forking.silence_output()
            for name in names:
                with contextlib.suppress(BaseException):
                    importlib.import_module(name)
            return {"cuda": forking.cuda_started()}

        finished = forking.run_in_child(probe, COLLECTION_LIMIT, still_wanted=self.still_wanted)
        return (finished.result or {}).get("cuda") is False

    def _warm_command_imports(self) -> None:
        """Import the libraries a smoke-training script imports (read from its source)."""
        assert self.command is not None
        script = self._command_file()
        if script is None:
            return
        try:
            tree = ast.parse(script.read_text(encoding="utf-8"))
        except (OSError, SyntaxError, UnicodeDecodeError):
            return
        names: list[str] = []
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                names.extend(alias.name for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names.append(node.module)
        self._import_libraries(names)

    def _command_file(self) -> Path | None:
        assert self.command is not None
        if not self.command.is_module:
            path = self.slot / self.command.target
            return path if path.is_file() else None
        parts = self.command.target.split(".")
        for base in (self.slot, self.slot / "src"):
            for candidate in (base.joinpath(*parts).with_suffix(".py"), base.joinpath(*parts, "__main__.py")):
                if candidate.is_file():
                    return candidate
        return None

    def _limit_threads(self) -> None:
        torch = sys.modules.get("torch")
        if torch is not None:
            with contextlib.suppress(Exception):
                torch.set_num_threads(self.threads)

    def _child_prologue(self) -> None:
        """In a forked child: let go of the campaign's pipes, keep the slot's thread share."""
        for fd in (self.commands, self.events):
            with contextlib.suppress(OSError):
                os.close(fd)
        self._limit_threads()


def _shallow(value) -> object:
    """What changes when a module-level value is changed in place (not deep, on purpose)."""
    version = getattr(value, "_version", None)  # a tensor's in-place update counter
    if isinstance(version, int):
        return ("tensor", version)
    if isinstance(value, (list, tuple)):
        return (len(value), tuple(id(item) for item in value[:32]))
    if isinstance(value, dict):
        return (len(value), tuple((repr(k), id(v)) for k, v in list(value.items())[:32]))
    if isinstance(value, (set, frozenset)):
        return len(value)
    if isinstance(value, (int, float, str, bytes, bool, type(None))):
        return repr(value)
    torch = sys.modules.get("torch")
    if torch is not None and isinstance(value, torch.nn.Module):  # weights trained in place
        return tuple(p._version for p in value.parameters())
    attributes = getattr(value, "__dict__", None)
    if isinstance(attributes, dict):
        return tuple((k, id(v)) for k, v in list(attributes.items())[:32])
    return None


FunctionKey = tuple[str, str, int]


def function_key(file: str, code: types.CodeType) -> FunctionKey:
    """A function as the campaign names it: project-relative file, qualified name, first line
    (the line of its first decorator). Mutants carry the same two last parts (`Mutant.function`,
    `Mutant.function_line`, from `Source.runtime_function`)."""
    return (file, code.co_qualname, code.co_firstlineno)


def _code_objects(module: types.CodeType) -> dict[tuple[str, int], types.CodeType]:
    """Every function code object in a compiled module, by (qualname, occurrence), in order."""
    found: dict[tuple[str, int], types.CodeType] = {}
    seen: dict[str, int] = {}
    stack = [module]
    while stack:
        code = stack.pop(0)
        for const in code.co_consts:
            if isinstance(const, types.CodeType):
                count = seen.get(const.co_qualname, 0)
                seen[const.co_qualname] = count + 1
                found[(const.co_qualname, count)] = const
                stack.append(const)
    return found


def _same_code(a: types.CodeType, b: types.CodeType) -> bool:
    """The same behaviour, whatever the line numbers."""
    if (a.co_code, a.co_names, a.co_varnames, a.co_freevars, a.co_cellvars) != (
        b.co_code,
        b.co_names,
        b.co_varnames,
        b.co_freevars,
        b.co_cellvars,
    ):
        return False
    if len(a.co_consts) != len(b.co_consts):
        return False
    for x, y in zip(a.co_consts, b.co_consts, strict=False):
        if isinstance(x, types.CodeType) and isinstance(y, types.CodeType):
            if not _same_code(x, y):
                return False
        elif type(x) is not type(y) or repr(x) != repr(y):
            return False
    return True
