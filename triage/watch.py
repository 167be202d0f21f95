"""`triage watch`: run a training command, record its log and telemetry, end it if it hangs.

    triage watch [--log F] [--telemetry F] [--interval S] [--stall-timeout S] [--no-nvml]
                 [--grace S] [--format text|markdown|json] [--report F] -- CMD...

The command runs in its own session (process group), with `PYTHONUNBUFFERED=1`. Its stdout and
stderr are merged (as `2>&1`, so the log keeps their order) and passed through byte for byte
(progress bars' `\\r` updates included) to this process's stdout and into the log. Every
`--interval` seconds the GPUs are sampled through NVML into the telemetry file, or, without
NVML, the CPU use and resident memory of the command's process tree (said once on stderr).

A run that prints nothing for `--stall-timeout` seconds while its GPUs (without GPUs: its
processes) sit idle is ended as hung: the whole process group and every descendant, including
ones that left the group (this process becomes their subreaper). One line saying so goes into
the log and on stderr; `triage explain` reads it as the run's hang. When the command exits, any
process it left behind is ended too. Ctrl-C, SIGTERM or SIGHUP is forwarded to the command's
process group; whatever is still running `--grace` seconds later is ended. Should watch itself
be killed, the command gets SIGTERM.

Python processes of the run count what trains (`trainwreck.probe`: backward passes, optimizer
steps, gradients kept from one step to the next) through a `sitecustomize` put first on their
PYTHONPATH (an environment's own still runs after it); the counts go into the log as its last
line, for triage to tell faults apart that print alike (`--no-probe`: leave the run as it is).

When the command fails (and was not interrupted), triage explains the log and telemetry
recorded: as text on stderr, or in `--format` into `--report F`. A command that exits 0 although
its log shows a failure (NaN or inf losses, a diverging loss, a traceback, an out-of-memory
error, a collective timeout) failed too: it is triaged the same way and watch exits 1
(`--no-fail-on-symptoms`: pass its 0 on, untriaged).

Exit codes: the command's own; 1 if it exited 0 but its log shows a failure; 128+N if a signal
N ended it; 124 if watch ended it as hung; 126 if the command cannot be executed, 127 if it does
not exist; 2 for bad input to watch itself (a log or telemetry file that cannot be written, a
bad option).
"""

from __future__ import annotations

import argparse
import contextlib
import ctypes
import errno
import fcntl
import json
import os
import select
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from trainwreck import probe
from trainwreck.errors import TrainwreckError
from trainwreck.processes import alive, become_subreaper, children, descendants, kill_tree

EXIT_SYMPTOMS = 1  # the command exited 0, but its log shows a failure
EXIT_HUNG = 124
EXIT_NOT_EXECUTABLE = 126
EXIT_NOT_FOUND = 127
DEFAULT_LOG = "trainwreck-run.log"
DEFAULT_TELEMETRY = "trainwreck-telemetry.jsonl"
DEFAULT_STALL_S = 900.0  # longer than NCCL's default 10-minute watchdog, whose own message says more
EXIT_WAIT_S = 2.0  # after the command exits: how long its leftovers may hold the output open
FORWARDED = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
_PR_SET_PDEATHSIG = 1

if TYPE_CHECKING:
    from triage.explain import Diagnosis
    from triage.telemetry_sampler import Sampler


class WatchError(TrainwreckError):
    """`triage watch` cannot start: a file it must write, or the command itself."""

    exit_code = 2


class CommandNotFound(WatchError):
    exit_code = EXIT_NOT_FOUND


class CommandNotExecutable(WatchError):
    exit_code = EXIT_NOT_EXECUTABLE


@dataclass(frozen=True)
class Options:
    """How to watch one run."""

    log: str = DEFAULT_LOG
    telemetry: str = DEFAULT_TELEMETRY
    interval: float = 2.0
    stall_timeout: float = DEFAULT_STALL_S  # 0: never end a run as hung
    grace: float = 5.0
    use_nvml: bool = True
    use_probe: bool = True  # count what trains in the run's Python processes (trainwreck.probe)


@dataclass(frozen=True)
class RunEnd:
    """How the run ended: the exit code watch passes on, and why."""

    code: int
    hung: bool = False
    interrupted: int | None = None  # the signal that interrupted watch, if one did
    samples: int = 0
    killed_by: int | None = None  # the signal that ended the command, if one did

    def describe(self) -> str:
        if self.hung:
            return f"exit {self.code}: ended as hung"
        if self.killed_by is not None:
            return f"exit {self.code}: ended by {signal.Signals(self.killed_by).name}"
        return f"exit {self.code}"


_DEFAULTS = Options()


# ---- the command line -----------------------------------------------------------------------


def add_parser(sub: Any) -> argparse.ArgumentParser:
    """Register `triage watch` on the `triage` command's subparsers."""
    doc = __doc__ or ""
    p = sub.add_parser(
        "watch",
        help="run a training command: log it, sample GPU telemetry, end it if it hangs",
        description=doc.split("Exit codes:")[0].strip(),
        epilog="exit codes: the command's own (128+N if signal N ended it), 1 it exited 0 "
        "but its log shows a failure (unless --no-fail-on-symptoms), 124 ended as "
        "hung, 126 command not executable, 127 command not found, 2 bad input",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--log", metavar="F", default=DEFAULT_LOG, help=f"the run's log (default {DEFAULT_LOG})")
    p.add_argument(
        "--telemetry",
        metavar="F",
        default=DEFAULT_TELEMETRY,
        help=f"JSON lines of telemetry samples (default {DEFAULT_TELEMETRY})",
    )
    p.add_argument(
        "--interval",
        metavar="S",
        type=_seconds(0.05),
        default=_DEFAULTS.interval,
        help=f"seconds between telemetry samples (default {_DEFAULTS.interval:g})",
    )
    p.add_argument(
        "--stall-timeout",
        metavar="S",
        type=_seconds(0.0),
        default=_DEFAULTS.stall_timeout,
        help=f"end the run as hung after S seconds without output while the GPUs (or, without "
        f"GPUs, its processes) sit idle; 0 never (default {DEFAULT_STALL_S:.0f})",
    )
    p.add_argument(
        "--grace",
        metavar="S",
        type=_seconds(0.0),
        default=_DEFAULTS.grace,
        help="after a forwarded Ctrl-C/SIGTERM or a hang: seconds the command gets to exit "
        f"before its processes are killed (default {_DEFAULTS.grace:g})",
    )
    p.add_argument("--no-nvml", action="store_true", help="record CPU and process memory even where NVML is available")
    p.add_argument(
        "--no-probe",
        action="store_true",
        help="do not count backward passes and optimizer steps in the run's Python processes "
        "(the last line of the log says what the probe counted)",
    )
    p.add_argument(
        "--format",
        choices=("text", "markdown", "json"),
        default="text",
        help="format of the explanation printed when the command fails (default text)",
    )
    p.add_argument("--report", metavar="F", help="write that explanation to F instead of stderr")
    p.add_argument(
        "--fail-on-symptoms",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="a command that exits 0 while its log shows a failure (NaN losses, a diverging "
        "loss, a traceback, out of memory, a collective timeout) is triaged and watch "
        "exits 1 (default); --no-fail-on-symptoms passes the 0 on untriaged",
    )
    # not "command": that is the name of the `triage` subcommand in the same namespace
    p.add_argument("cmd", nargs=argparse.REMAINDER, metavar="-- CMD...", help="the command to run")
    return p


def _seconds(minimum: float) -> Callable[[str], float]:
    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"not a number of seconds: {text!r}") from None
        if not value >= minimum or value == float("inf"):
            raise argparse.ArgumentTypeError(f"must be at least {minimum:g} seconds: {text!r}")
        return value

    return parse


def main(args: argparse.Namespace) -> int:
    """Run `triage watch` from parsed arguments; return the exit code."""
    command = list(args.cmd)
    if command[:1] == ["--"]:
        command = command[1:]
    if not command:
        raise WatchError("no command to watch: give it after --, e.g. triage watch -- python train.py")
    opts = Options(
        log=args.log,
        telemetry=args.telemetry,
        interval=args.interval,
        stall_timeout=args.stall_timeout,
        grace=args.grace,
        use_nvml=not args.no_nvml,
        use_probe=not args.no_probe,
    )
    if args.report:
        _writable(args.report, "report")
    outcome = run(command, opts)
    if outcome.interrupted is not None:
        return outcome.code
    if outcome.code != 0:
        _explain(opts, outcome, args.format, args.report)
        return outcome.code
    if args.fail_on_symptoms:
        report = _read_back(opts, outcome)
        if report is not None and report.failures:
            _explain(opts, outcome, args.format, args.report, report=report)
            return EXIT_SYMPTOMS
    return outcome.code


# ---- running the command --------------------------------------------------------------------


def _open(path: str, what: str) -> IO[bytes]:
    try:
        return open(path, "wb")
    except OSError as exc:
        raise WatchError(f"{path}: cannot write the {what} ({exc.strerror or exc})") from None


def _writable(path: str, what: str) -> None:
    p = Path(path)
    if (
        p.is_dir()
        or not os.access(p.parent if str(p.parent) else ".", os.W_OK)
        or (p.exists() and not os.access(p, os.W_OK))
    ):
        raise WatchError(f"{path}: cannot write the {what}")


def _die_with_us() -> Callable[[], None] | None:
    """A pre-exec hook: the command gets SIGTERM when this process dies, even by SIGKILL (Linux).

    The command runs in a session of its own, so a runner that kills our process group would
    miss it; this way it still goes (and a launcher such as torchrun takes its workers along).
    """
    try:
        prctl = ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None
    parent = os.getpid()

    def arm() -> None:
        prctl(_PR_SET_PDEATHSIG, int(signal.SIGTERM), 0, 0, 0)
        if os.getppid() != parent:  # we died before it was armed
            os._exit(128 + signal.SIGTERM)

    return arm


def _spawn(command: list[str], extra: dict[str, str]) -> subprocess.Popen[bytes]:
    env = dict(os.environ, PYTHONUNBUFFERED="1", **extra)
    try:
        # own session: the group can be ended as a whole, and a terminal's Ctrl-C reaches the
        # command once, forwarded by us, not twice
        return subprocess.Popen(
            command,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            env=env,
            start_new_session=True,
            bufsize=0,
            preexec_fn=_die_with_us(),
        )
    except FileNotFoundError:
        raise CommandNotFound(f"{command[0]}: command not found") from None
    except PermissionError:
        raise CommandNotExecutable(f"{command[0]}: permission denied (not executable)") from None
    except OSError as exc:
        if exc.errno == errno.ENOEXEC:
            raise CommandNotExecutable(f"{command[0]}: cannot execute ({exc.strerror})") from None
        raise WatchError(f"{command[0]}: cannot run ({exc.strerror or exc})") from None


class _Tee:
    """The command's output: to the console as it comes, and into the log."""

    def __init__(self, log: IO[bytes], console: IO[bytes] | None, errors: IO[str]) -> None:
        self.log = log
        self.console = console
        self.errors = errors
        self.log_at_line_start = True
        self.console_at_line_start = True

    def write(self, data: bytes) -> None:
        if self.console is not None:
            try:
                self.console.write(data)
                self.console.flush()
            except (OSError, ValueError):
                self.console = None  # a closed console (`| head`) must not stop the run or its log
            self.console_at_line_start = data.endswith(b"\n")
        self.log.write(data)
        self.log.flush()
        self.log_at_line_start = data.endswith(b"\n")

    def log_line(self, line: str) -> None:
        """One line of our own into the log only, on a line of its own."""
        self.log.write((b"" if self.log_at_line_start else b"\n") + line.encode() + b"\n")
        self.log.flush()
        self.log_at_line_start = True

    def note(self, line: str, *, log: bool = True) -> None:
        """One line of our own on stderr and (`log`) into the log, each on a line of its own."""
        # after a progress bar's unfinished line, start a new one rather than glue onto it
        print(("" if self.console_at_line_start else "\n") + line, file=self.errors, flush=True)
        self.console_at_line_start = True
        if log:
            self.log_line(line)


def run(
    command: list[str], opts: Options, *, console: IO[bytes] | None = None, errors: IO[str] | None = None
) -> RunEnd:
    """Run `command` under watch and return how it ended.

    Meant for the `triage watch` process itself: it makes this process a child subreaper and
    counts every process below it as the run's, and it ends all of them before it returns.
    """
    errors = errors if errors is not None else sys.stderr
    if console is None:
        console = sys.stdout.buffer
    log = _open(opts.log, "log")
    try:
        telemetry = _open(opts.telemetry, "telemetry file")
    except WatchError:
        log.close()
        raise
    # signals are trapped before the command starts: a Ctrl-C at any moment reaches it, and
    # never ends this process while the command goes on without it
    # imported here, not with the module: `triage explain` builds this command's parser too
    from triage.telemetry_sampler import Sampler

    # where the run's processes count (trainwreck.probe): removed however the run ends, a command
    # that cannot start included
    probed = (
        tempfile.TemporaryDirectory(prefix="trainwreck-probe-", ignore_cleanup_errors=True)
        if opts.use_probe
        else contextlib.nullcontext(None)
    )
    with probed as folder, log, telemetry, _SignalTrap() as trap:
        counted = Path(folder) if folder is not None else None
        become_subreaper()
        tee = _Tee(log, console, errors)
        proc = _spawn(command, probe.environment(counted) if counted is not None else {})
        try:
            sampler = Sampler(os.getpid(), use_nvml=opts.use_nvml)
            try:
                if sampler.notice:
                    tee.note(f"triage watch: {sampler.notice}", log=False)
                outcome = _Watch(proc, opts, tee, sampler, telemetry, trap).loop()
            finally:
                sampler.close()
            if counted is not None and not (counts := probe.collect(counted)).empty:
                tee.log_line(counts.line())
            return outcome
        finally:
            _end_run(proc, 0.0)  # whatever happened above, nothing of the run outlives us
            proc.wait()
            proc.stdout.close()  # type: ignore[union-attr]


class _SignalTrap:
    """Ctrl-C, SIGTERM and SIGHUP noted (not acted on) and a pipe that wakes the loop on any signal."""

    def __init__(self) -> None:
        self.received: list[int] = []
        self.wake_r, self.wake_w = os.pipe()
        for fd in (self.wake_r, self.wake_w):
            fcntl.fcntl(fd, fcntl.F_SETFL, fcntl.fcntl(fd, fcntl.F_GETFL) | os.O_NONBLOCK)
        self._old: dict[int, Any] = {}
        self._old_wakeup: int | None = None

    def __enter__(self) -> _SignalTrap:
        def note(signum: int, _frame: object) -> None:
            self.received.append(signum)

        def child_ended(_signum: int, _frame: object) -> None:
            pass  # only the wakeup byte matters: the loop looks at the command at once

        try:
            self._old_wakeup = signal.set_wakeup_fd(self.wake_w, warn_on_full_buffer=False)
            for sig in FORWARDED:
                self._old[sig] = signal.signal(sig, note)
            self._old[signal.SIGCHLD] = signal.signal(signal.SIGCHLD, child_ended)
        except ValueError:  # not the main thread: signals stay the caller's business
            pass
        return self

    def drain(self) -> None:
        with contextlib.suppress(BlockingIOError):
            while os.read(self.wake_r, 512):
                pass

    def __exit__(self, *exc: object) -> None:
        for sig, handler in self._old.items():
            signal.signal(sig, handler)
        if self._old_wakeup is not None:
            signal.set_wakeup_fd(self._old_wakeup)
        os.close(self.wake_r)
        os.close(self.wake_w)


class _Watch:
    """The watch loop's state: output, samples, stall clock, signals received."""

    def __init__(
        self,
        proc: subprocess.Popen[bytes],
        opts: Options,
        tee: _Tee,
        sampler: Sampler,
        telemetry: IO[bytes],
        trap: _SignalTrap,
    ) -> None:
        self.proc = proc
        self.opts = opts
        self.tee = tee
        self.sampler = sampler
        self.telemetry = telemetry
        self.trap = trap
        self.start = time.monotonic()
        self.last_output = self.start
        self.last_busy = self.start
        self.samples = 0

    def sample(self, now: float) -> None:
        rnd = self.sampler.sample(now - self.start, time.time())
        for rec in rnd.records:
            self.telemetry.write(json.dumps(rec, separators=(",", ":")).encode() + b"\n")
            self.samples += 1
        self.telemetry.flush()
        if rnd.idle is False:
            self.last_busy = now

    def stalled(self, now: float) -> bool:
        """No output and nothing busy for the whole stall timeout."""
        t = self.opts.stall_timeout
        return bool(t) and now - self.last_output >= t and now - self.last_busy >= t

    def loop(self) -> RunEnd:
        out_fd = self.proc.stdout.fileno()  # type: ignore[union-attr]
        wake_r = self.trap.wake_r
        interval = self.opts.interval
        self.sample(self.start)
        next_sample = self.start + interval
        eof = False
        exited_at: float | None = None
        stop_deadline: float | None = None  # after a forwarded signal: when to stop waiting
        interrupted: int | None = None
        hung = False
        while True:
            now = time.monotonic()
            wait = next_sample - now
            if self.opts.stall_timeout and not (hung or interrupted):
                wait = min(wait, max(self.last_output, self.last_busy) + self.opts.stall_timeout - now)
            if exited_at is not None:
                wait = min(wait, exited_at + EXIT_WAIT_S - now)
            if stop_deadline is not None or (eof and exited_at is None):
                # stopping, or the output closed and the exit is due any moment: check often
                wait = min(wait, 0.05)
            try:
                ready, _, _ = select.select([wake_r] if eof else [out_fd, wake_r], [], [], max(0.0, wait))
            except InterruptedError:
                ready = []
            if wake_r in ready:
                self.trap.drain()
            if out_fd in ready:
                data = os.read(out_fd, 1 << 16)
                if data:
                    self.tee.write(data)
                    self.last_output = time.monotonic()
                else:
                    eof = True
            now = time.monotonic()
            if self.trap.received:
                sig = self.trap.received.pop(0)
                if interrupted is None:
                    interrupted = sig
                    # SIGTERM is how CI cancels a job: said in the words triage reads as a cancellation
                    self.tee.note(
                        "triage watch: interrupted (SIGINT); stopping the run"
                        if sig == signal.SIGINT
                        else f"triage watch: received signal {signal.Signals(sig).name}; stopping the run"
                    )
                    _forward(self.proc, sig)
                    stop_deadline = now + self.opts.grace
                else:
                    stop_deadline = now  # a second one: stop waiting
            if exited_at is None and self.proc.poll() is not None:
                exited_at = now
            if now >= next_sample:
                if exited_at is None:  # a run that is ending says nothing about itself any more
                    self.sample(now)
                _reap_adopted(self.proc)
                next_sample = max(next_sample + interval, now + interval / 2)
            if not (hung or interrupted) and exited_at is None and self.stalled(now):
                hung = True
                from triage.detectors.progress import watch_hang_line

                self.tee.note(watch_hang_line(now - self.last_output, self.sampler.idle_what) + f" (exit {EXIT_HUNG})")
                _end_run(self.proc, self.opts.grace)
                exited_at = time.monotonic()
            # once the command is gone, its leftovers may hold the output open: not for long, and
            # not at all after a Ctrl-C
            if exited_at is not None and (eof or interrupted or now >= exited_at + EXIT_WAIT_S):
                break
            if stop_deadline is not None and now >= stop_deadline:
                _end_run(self.proc, 0.0)
                stop_deadline = None
                exited_at = exited_at if exited_at is not None else time.monotonic()
        # the command is gone: what it left behind gets SIGTERM, and SIGKILL a moment later
        _end_run(self.proc, min(self.opts.grace, 1.0))
        self._drain(out_fd, eof)
        code = self.proc.wait()
        killed_by = -code if code < 0 else None
        code = 128 - code if code < 0 else code  # as shells report a signal: 128 + its number
        return RunEnd(
            EXIT_HUNG if hung else code, hung=hung, interrupted=interrupted, samples=self.samples, killed_by=killed_by
        )

    def _drain(self, out_fd: int, eof: bool) -> None:
        """What the command wrote before it ended, now that nothing of it can write any more."""
        deadline = time.monotonic() + 1.0
        while not eof and time.monotonic() < deadline:
            ready, _, _ = select.select([out_fd], [], [], max(0.0, deadline - time.monotonic()))
            if not ready:
                break
            data = os.read(out_fd, 1 << 16)
            if not data:
                break
            self.tee.write(data)


# ---- ending processes -----------------------------------------------------------------------


def _orphans(proc: subprocess.Popen[bytes]) -> list[int]:
    """Processes re-parented to us (this process is their subreaper), not the command itself."""
    return [pid for pid in children(os.getpid()) if pid != proc.pid]


def _forward(proc: subprocess.Popen[bytes], sig: int) -> None:
    """Pass a signal on as a terminal would: to the command's process group (and our orphans)."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, sig)
    for pid in _orphans(proc):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, sig)


def _end_run(proc: subprocess.Popen[bytes], grace: float) -> None:
    """End the command's group, its descendants and every orphan of the run we adopted."""
    if proc.returncode is None:
        kill_tree(proc.pid, grace=grace)
    # once reaped, its pid may be reused: what is left of the run is below us (we are its subreaper)
    for _ in range(3):  # an orphan may be re-parented to us while we kill its parent
        left = [pid for pid in descendants(os.getpid()) if alive(pid)]
        if not left:
            break
        for pid in left:
            kill_tree(pid, grace=0.0)
        _reap_adopted(proc)
    _reap_adopted(proc)


def _reap_adopted(proc: subprocess.Popen[bytes]) -> None:
    # adopted orphans only: the command's own exit status belongs to Popen
    for pid in _orphans(proc):
        with contextlib.suppress(ChildProcessError):
            os.waitpid(pid, os.WNOHANG)


# ---- after a failure ------------------------------------------------------------------------


def _read_back(opts: Options, outcome: RunEnd) -> Diagnosis | None:
    """Triage of a run that exited 0 (None when its log holds nothing to read)."""
    from triage.explain import explain

    try:
        return explain(opts.log, telemetry=opts.telemetry if outcome.samples else None, search_cwd=True)
    except TrainwreckError:  # an empty log: nothing says the run failed
        return None
    except Exception as exc:
        print(f"triage watch: triage of the log failed: {type(exc).__name__}: {exc}", file=sys.stderr)
        return None


def _explain(
    opts: Options, outcome: RunEnd, fmt: str, report_path: str | None, *, report: Diagnosis | None = None
) -> None:
    """Explain the failed run from what was recorded: on stderr, or into `report_path`."""
    from triage import render
    from triage.explain import explain

    telemetry = opts.telemetry if outcome.samples else None
    if report is None:
        why = f"the command failed ({outcome.describe()})"
    else:
        names = ", ".join(dict.fromkeys(s.name for s in report.failures))
        why = (
            f"the command exited 0 but its log shows a failure ({names}; exit {EXIT_SYMPTOMS}, "
            "--no-fail-on-symptoms to pass the 0 on)"
        )
    print(
        f"triage watch: {why}; triage of {opts.log}"
        + (f" and {opts.telemetry}" if telemetry else "")
        + (f" in {report_path}" if report_path else ":"),
        file=sys.stderr,
        flush=True,
    )
    try:
        if report is None:
            # as `triage explain` in the user's checkout: their trainwreck-causes.yaml counts
            report = explain(opts.log, telemetry=telemetry, search_cwd=True)
        if fmt == "json":
            out = render.json_text(report)
        elif fmt == "markdown":
            out = render.markdown(report)
        else:
            color = report_path is None and sys.stderr.isatty()
            out = render.text(report, color=color)
    except TrainwreckError as exc:
        print(f"triage watch: nothing to explain: {exc}", file=sys.stderr)
        return
    except Exception as exc:
        print(f"triage watch: triage failed: {type(exc).__name__}: {exc}", file=sys.stderr)
        return
    if report_path is None:
        sys.stderr.write(out)
        sys.stderr.flush()
        return
    try:
        Path(report_path).write_text(out, encoding="utf-8")
    except OSError as exc:
        print(f"triage watch: {report_path}: cannot write the report ({exc.strerror or exc})", file=sys.stderr)
