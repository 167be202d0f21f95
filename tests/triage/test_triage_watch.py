"""`triage watch` end to end: real child programs, their output, exit codes, hangs, telemetry, signals.

Every test runs the real `triage watch` in a subprocess on small Python programs; processes that
must not survive are looked for in /proc by a unique marker in their command line. The one
fake is `FakeNVML` below: NVML needs an NVIDIA GPU and driver, which this CI does not have.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import textwrap
import time
import uuid
from pathlib import Path
from types import SimpleNamespace

import pytest

from triage import detectors
from triage.detectors import progress, telemetry
from triage.explain import explain
from triage.telemetry_sampler import GpuReading, Sampler, gpu_record, gpus_idle, read_gpus
from triage.watch import EXIT_HUNG, EXIT_NOT_FOUND

FAST = ["--interval", "0.1", "--grace", "1"]


def watch(cwd: Path, *args: str, timeout: float = 30) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [sys.executable, "-m", "triage.cli", "watch", *args], cwd=cwd, capture_output=True, timeout=timeout
    )


def script(tmp_path: Path, body: str, name: str = "child.py") -> str:
    path = tmp_path / name
    path.write_text(textwrap.dedent(body))
    return str(path)


def survivors(marker: str) -> list[int]:
    """Live processes whose command line holds `marker` (zombies have none)."""
    found = []
    for entry in Path("/proc").glob("[0-9]*"):
        try:
            if marker.encode() in (entry / "cmdline").read_bytes():
                found.append(int(entry.name))
        except OSError:
            continue
    return found


def wait_for(condition, timeout: float = 10.0):
    """`condition()` once it is true (polled), else its last false value after `timeout` s."""
    deadline = time.monotonic() + timeout
    while not (value := condition()) and time.monotonic() < deadline:
        time.sleep(0.05)
    return value


def end(marker: str) -> None:
    """Kill every live process whose command line holds `marker`."""
    for pid in survivors(marker):
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGKILL)


def test_output_passes_through_unchanged_and_lands_in_the_log(tmp_path):
    child = script(
        tmp_path,
        r"""
        import os, sys
        print("unbuffered:", os.environ.get("PYTHONUNBUFFERED"))
        print("step 1 loss 2.5")
        sys.stderr.write("a warning on stderr\n")
        sys.stdout.write("epoch 1:  10%\repoch 1:  50%\repoch 1: 100%\n")
        sys.stdout.buffer.write(b"not utf-8: \xff\xfe\n")
        """,
    )
    r = watch(tmp_path, *FAST, "--", sys.executable, child)
    expected = (
        b"unbuffered: 1\nstep 1 loss 2.5\na warning on stderr\n"
        b"epoch 1:  10%\repoch 1:  50%\repoch 1: 100%\nnot utf-8: \xff\xfe\n"
    )
    assert r.returncode == 0, r.stderr
    assert r.stdout == expected
    assert (tmp_path / "trainwreck-run.log").read_bytes() == expected
    assert b"failed" not in r.stderr  # a run that succeeds is not triaged


@pytest.mark.parametrize(
    "ending,code",
    [
        ("sys.exit(0)", 0),
        ("sys.exit(3)", 3),
        ("os.kill(os.getpid(), signal.SIGTERM)", 128 + signal.SIGTERM),
    ],
)
def test_exit_code_is_the_commands_own(tmp_path, ending, code):
    child = script(
        tmp_path,
        f"""
        import os, signal, sys
        print("step 1 loss 2.5")
        {ending}
        """,
    )
    r = watch(tmp_path, *FAST, "--log", "run.log", "--", sys.executable, child)
    assert r.returncode == code
    assert (tmp_path / "run.log").read_bytes() == b"step 1 loss 2.5\n"
    if code:  # a failure is triaged from what was recorded
        assert f"the command failed (exit {code}".encode() in r.stderr
        assert b"triage run.log" in r.stderr


def test_a_failure_is_explained_into_a_report_file(tmp_path):
    child = script(
        tmp_path,
        """
        for step in range(8):
            print(f"step {step} loss {2.0 - 0.1 * step:.3f}")
        raise RuntimeError("CUDA out of memory. Tried to allocate 2.00 GiB")
        """,
    )
    r = watch(tmp_path, *FAST, "--format", "json", "--report", "triage.json", "--", sys.executable, child)
    assert r.returncode == 1
    report = json.loads((tmp_path / "triage.json").read_text())
    assert report["causes"][0]["id"] == "cuda-oom"
    assert b"triage.json" in r.stderr and b"cuda-oom" not in r.stderr


# A real (tiny) torch training that exits 0 whatever its loss does: the learning rate decides
# whether the loss goes down or overflows to inf and then NaN.
TRAINING = """
    import sys
    import torch

    torch.manual_seed(0)
    lr = float(sys.argv[1])
    x = torch.randn(64, 8)
    y = x @ torch.randn(8, 1)
    model = torch.nn.Linear(8, 1)
    optimizer = torch.optim.SGD(model.parameters(), lr=lr)
    for step in range(1, 41):
        optimizer.zero_grad()
        loss = torch.nn.functional.mse_loss(model(x), y)
        loss.backward()
        optimizer.step()
        print(f"step {step} | loss={loss.item():.4f} | lr={lr}")
    print("training done")
    """


def test_a_run_that_exits_0_with_nan_losses_is_triaged_and_fails(tmp_path):
    child = script(tmp_path, TRAINING)
    r = watch(tmp_path, *FAST, "--", sys.executable, child, "1000")
    log = (tmp_path / "trainwreck-run.log").read_text()
    printed = [line for line in log.splitlines() if not line.startswith("[trainwreck probe]")]
    assert "loss=nan" in log and printed[-1] == "training done"  # it did exit 0
    assert r.returncode == 1, r.stderr
    err = r.stderr.decode()
    said = [line for line in err.splitlines() if "the command exited 0 but its log shows a failure (" in line]
    assert len(said) == 1 and "loss-non-finite" in said[0]
    assert "--no-fail-on-symptoms" in err
    # the triage itself follows, as for a run that failed by its exit code
    assert explain(tmp_path / "trainwreck-run.log").status != "healthy"
    assert "lr-too-high" in err


def test_a_run_with_nan_losses_writes_its_triage_into_the_report(tmp_path):
    child = script(tmp_path, TRAINING)
    r = watch(tmp_path, *FAST, "--format", "markdown", "--report", "triage.md", "--", sys.executable, child, "1000")
    assert r.returncode == 1
    assert "lr-too-high" in (tmp_path / "triage.md").read_text()


def test_no_fail_on_symptoms_passes_the_commands_0_on_untriaged(tmp_path):
    child = script(tmp_path, TRAINING)
    r = watch(tmp_path, *FAST, "--no-fail-on-symptoms", "--report", "triage.txt", "--", sys.executable, child, "1000")
    assert r.returncode == 0
    assert b"exited 0" not in r.stderr and not (tmp_path / "triage.txt").exists()


def test_a_healthy_training_that_exits_0_passes(tmp_path):
    child = script(tmp_path, TRAINING)
    r = watch(tmp_path, *FAST, "--report", "triage.txt", "--", sys.executable, child, "0.05")
    assert "loss=nan" not in (tmp_path / "trainwreck-run.log").read_text()
    assert r.returncode == 0, r.stderr
    assert r.stderr == b"" or b"triage of" not in r.stderr
    assert not (tmp_path / "triage.txt").exists()


def test_a_hung_command_is_ended_with_every_descendant_and_recorded(tmp_path):
    marker = f"trainwreck-hang-{uuid.uuid4().hex}"
    child = script(
        tmp_path,
        f"""
        import subprocess, sys, time
        sleeper = [sys.executable, "-c", "import time; time.sleep(60)", "{marker}"]
        # a worker in a session of its own, still our child ...
        subprocess.Popen(sleeper, start_new_session=True)
        # ... and one whose parent exits at once: it escapes the group and loses its parent
        subprocess.run([sys.executable, "-c",
                        "import subprocess, sys; subprocess.Popen(sys.argv[1:], start_new_session=True)",
                        *sleeper])
        for step in range(3):
            print(f"step {{step}} loss {{2.0 - 0.1 * step:.3f}}")
        sys.stdout.write("epoch 1:  50%\\r")
        time.sleep(60)
        """,
    )
    started = time.monotonic()
    r = watch(tmp_path, *FAST, "--stall-timeout", "1", "--", sys.executable, child)
    assert r.returncode == EXIT_HUNG
    assert time.monotonic() - started < 15
    assert survivors(marker) == []
    err = r.stderr.decode()
    assert "triage watch: stall timeout: no output for 1 s and its processes idle" in err
    assert "ended the run as hung" in err and "log-stopped" in err  # the explanation followed
    log = (tmp_path / "trainwreck-run.log").read_bytes()
    # the bar's update passed through; the hang's record starts a line of its own
    assert b"epoch 1:  50%\r\ntriage watch: stall timeout: no output for 1 s" in log
    report = explain(tmp_path / "trainwreck-run.log", telemetry=tmp_path / "trainwreck-telemetry.jsonl")
    hang = next(s for s in report.symptoms if s.name == "log-stopped")
    assert "hung" in hang.summary
    assert report.status == "explained" and report.causes[0].id == "rank-skip"
    assert not {"gpu-idle", "gpu-low-util", "gpu-memory-climbing"} & {s.name for s in report.symptoms}


def test_without_nvml_cpu_and_memory_are_recorded_and_a_leak_is_named(tmp_path):
    child = script(
        tmp_path,
        """
        import time
        keep = []
        for step in range(40):
            block = bytearray(2 << 20)
            block[::4096] = b"x" * len(block[::4096])  # touch it: resident, not just reserved
            keep.append(block)
            if step % 10 == 0:
                print(f"step {step} loss {1.0 / (step + 1):.3f}")
            time.sleep(0.05)
        """,
    )
    r = watch(tmp_path, *FAST, "--no-nvml", "--", sys.executable, child)
    assert r.returncode == 0
    assert r.stderr.count(b"no GPU telemetry") == 1 and r.stderr.count(b"\n") == 1
    samples = [json.loads(line) for line in (tmp_path / "trainwreck-telemetry.jsonl").read_text().splitlines()]
    assert len(samples) >= 10
    assert all("cpu_util" in s and s["mem_used"] > 0 and "gpu_util" not in s for s in samples)
    assert max(s["mem_used"] for s in samples) > samples[0]["mem_used"] + (40 << 20)
    report = explain(tmp_path / "trainwreck-run.log", telemetry=tmp_path / "trainwreck-telemetry.jsonl")
    names = {s.name for s in report.symptoms}
    assert "memory-growing" in names
    assert not {"gpu-idle", "gpu-low-util", "gpu-memory-climbing"} & names


@pytest.mark.parametrize("ignores_sigint", [False, True], ids=["exits-on-ctrl-c", "ignores-ctrl-c"])
def test_ctrl_c_is_forwarded_and_leaves_no_process_behind(tmp_path, ignores_sigint):
    marker = f"trainwreck-sigint-{uuid.uuid4().hex}"
    child = script(
        tmp_path,
        f"""
        import signal, subprocess, sys, time
        if {ignores_sigint}:
            signal.signal(signal.SIGINT, signal.SIG_IGN)
        subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)", "{marker}"],
                         start_new_session=True)
        print("ready", flush=True)
        time.sleep(60)
        """,
    )
    p = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "triage.cli",
            "watch",
            "--interval",
            "0.1",
            "--grace",
            "0.5",
            "--",
            sys.executable,
            child,
        ],
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        assert p.stdout is not None and p.stdout.readline() == b"ready\n"
        assert wait_for(lambda: survivors(marker))  # the grandchild, in a session of its own
        p.send_signal(signal.SIGINT)
        _, err = p.communicate(timeout=15)
        wait_for(lambda: not survivors(marker), timeout=2)  # a killed process takes a moment to go
        left = survivors(marker)
    finally:
        if p.poll() is None:
            p.kill()
        end(marker)  # whatever happened above, this test leaves no process behind
    assert left == []
    if ignores_sigint:  # ended after the grace period
        assert p.returncode in (128 + signal.SIGTERM, 128 + signal.SIGKILL)
    else:
        assert p.returncode == 128 + signal.SIGINT
    assert b"interrupted (SIGINT)" in (tmp_path / "trainwreck-run.log").read_bytes()
    assert b"the command failed" not in err  # an interrupted run is not triaged


def test_the_command_does_not_outlive_a_killed_watch(tmp_path):
    # a runner that SIGKILLs watch's process group misses the command's own session
    marker = f"trainwreck-orphan-{uuid.uuid4().hex}"
    child = script(
        tmp_path,
        """
        import time
        print("ready", flush=True)
        time.sleep(60)
        """,
    )
    p = subprocess.Popen(
        [sys.executable, "-m", "triage.cli", "watch", "--", sys.executable, child, marker],
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    )
    try:
        assert p.stdout is not None and p.stdout.readline() == b"ready\n"
        assert survivors(marker)
        p.kill()
        p.wait(timeout=5)
        deadline = time.monotonic() + 5
        while survivors(marker) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert survivors(marker) == []
    finally:
        p.kill()
        for pid in survivors(marker):
            os.kill(pid, signal.SIGKILL)


@pytest.mark.parametrize(
    "args,code,text",
    [
        (["--", "no-such-command-trainwreck"], EXIT_NOT_FOUND, "no-such-command-trainwreck: command not found"),
        (["--log", "missing-dir/run.log", "--", sys.executable, "-c", "open('ran', 'w')"], 2, "cannot write the log"),
        ([], 2, "no command to watch"),
    ],
)
def test_bad_input_is_one_line_and_its_exit_code(tmp_path, args, code, text):
    r = watch(tmp_path, *args)
    assert r.returncode == code
    assert len(r.stderr.decode().strip().splitlines()) == 1 and text in r.stderr.decode()
    assert not (tmp_path / "ran").exists()


# ---- the telemetry format: host samples, and GPU samples from NVML ----------------------------


def test_host_samples_never_claim_a_gpu_and_a_plateau_after_start_up_is_not_a_leak(tmp_path):
    # start-up (imports, data) grows memory fast, then it stays put with allocator jitter;
    # the CPU goes from busy to idle, which would be "gpu-idle" were these GPU samples
    mem = [50e6 * (i + 1) for i in range(4)] + [400e6 + (i % 3) * 8192 for i in range(40)]
    samples = [
        {"t": 5.0 * i, "cpu_util": 95.0 if i < 30 else 0.0, "mem_used": m, "procs": 2} for i, m in enumerate(mem)
    ]
    path = tmp_path / "host.jsonl"
    path.write_text("".join(json.dumps(s) + "\n" for s in samples))
    ctx = detectors.Context([], {})
    ctx.telemetry = telemetry.load(path)
    assert telemetry.detect(ctx) == []


def test_the_hang_line_is_read_back_as_the_runs_hang(tmp_path):
    log = tmp_path / "run.log"
    log.write_text(
        "step 1 loss 2.0\nstep 2 loss 1.9\n"
        + progress.watch_hang_line(912.4, "the GPUs idle (utilisation <= 5%)")
        + " (exit 124)\n"
    )
    report = explain(log)
    hang = next(s for s in report.symptoms if s.name == "log-stopped")
    assert "no output for 912 s and the GPUs idle" in hang.summary and hang.value == 912
    assert [e.line for e in hang.evidence] == [2, 3]


class FakeNVML:
    """THE ONLY FAKE in these tests: pynvml's calls, for GPUs this CI does not have."""

    class NVMLError(Exception):
        pass

    def __init__(self, util, used, procs, failing=()):
        self.util, self.used, self.procs, self.failing = util, used, procs, set(failing)
        self.shut = False

    def _check(self, call, handle):
        if (call, handle) in self.failing:
            raise self.NVMLError(f"{call} not supported")

    def nvmlDeviceGetCount(self):
        return len(self.util)

    def nvmlDeviceGetHandleByIndex(self, i):
        return f"handle{i}"

    def nvmlDeviceGetUtilizationRates(self, h):
        self._check("util", h)
        return SimpleNamespace(gpu=self.util[int(h[-1])], memory=0)

    def nvmlDeviceGetMemoryInfo(self, h):
        self._check("mem", h)
        return SimpleNamespace(used=self.used[int(h[-1])], total=80 << 30, free=0)

    def nvmlDeviceGetComputeRunningProcesses(self, h):
        self._check("procs", h)
        return [SimpleNamespace(pid=pid, usedGpuMemory=m) for pid, m in self.procs[int(h[-1])]]

    def nvmlShutdown(self):
        self.shut = True


def test_nvml_readings_become_telemetry_lines_that_explain_reads(tmp_path):
    fake = FakeNVML(
        util=[97, 0],
        used=[30 << 30, 1 << 30],
        procs=[[(4242, 29 << 30)], [(77, None)]],
        failing=[("util", "handle1"), ("procs", "handle1")],
    )
    sampler = Sampler(os.getpid(), nvml=fake)
    assert sampler.gpu and sampler.notice is None
    rnd = sampler.sample(1.5, 1700000000.0)
    assert rnd.records == (
        {
            "t": 1.5,
            "wall": 1700000000.0,
            "gpu": 0,
            "gpu_util": 97.0,
            "mem_used": 30 << 30,
            "mem_total": 80 << 30,
            "procs": {"4242": 29 << 30},
        },
        # a call NVML refused leaves its key out, not the GPU
        {"t": 1.5, "wall": 1700000000.0, "gpu": 1, "mem_used": 1 << 30, "mem_total": 80 << 30},
    )
    assert rnd.idle is False
    sampler.close()
    assert fake.shut
    # a run that was busy and then sat idle, as watch writes it, is read back as gpu-idle
    path = tmp_path / "gpu.jsonl"
    with path.open("w") as f:
        for t in range(0, 300, 5):
            reading = GpuReading(0, 90.0 if t < 150 else 0.0, 20 << 30, 80 << 30, ((4242, None),))
            f.write(json.dumps(gpu_record(float(t), 1e9 + t, reading)) + "\n")
    ctx = detectors.Context([], {})
    ctx.telemetry = telemetry.load(path)
    assert "gpu-idle" in {s.name for s in telemetry.detect(ctx)}


def test_idle_means_the_runs_own_gpus_when_nvml_names_its_processes():
    busy_other = GpuReading(0, 99.0, 1, 2, ((999, 10),))
    idle_ours = GpuReading(1, 0.0, 1, 2, ((1234, None),))
    assert gpus_idle([busy_other, idle_ours], tree={1234}) is True
    # pids from another namespace match nothing: then every GPU counts
    assert gpus_idle([busy_other, idle_ours], tree={5}) is False
    assert gpus_idle([GpuReading(0, None, None, None)], tree=set()) is None
    fake = FakeNVML(util=[], used=[], procs=[])
    sampler = Sampler(os.getpid(), nvml=fake)
    assert not sampler.gpu and "NVML sees no GPU" in (sampler.notice or "")
    assert read_gpus(fake, []) == []


def test_a_process_that_is_exiting_counts_neither_memory_nor_time(monkeypatch):
    # caught between releasing its memory and becoming a zombie, a process reads 0 bytes resident:
    # a sample that counted it would show the run's memory dropping to nothing
    import contextlib
    from types import SimpleNamespace

    from triage import telemetry_sampler

    resident = {1: 50 << 20, 2: 0}

    class Fake:
        def __init__(self, pid):
            self.pid = pid

        def oneshot(self):
            return contextlib.nullcontext()

        def status(self):
            return "running"

        def cpu_times(self):
            return SimpleNamespace(user=1.0, system=0.5)

        def memory_info(self):
            return SimpleNamespace(rss=resident[self.pid])

        def create_time(self):
            return 100.0

    monkeypatch.setattr(telemetry_sampler.psutil, "Process", Fake)
    usage = telemetry_sampler.ProcessTree(0).read(1.0, [1, 2])
    assert usage is not None and usage.rss == 50 << 20 and usage.procs == 1


STEP_FAULTS = Path(__file__).resolve().parent / "calibration" / "programs" / "step_faults.py"


def _watched_causes(tmp_path: Path, fault: str, *options: str) -> tuple[str, dict]:
    log, report = tmp_path / f"{fault}.log", tmp_path / f"{fault}.json"
    done = watch(
        tmp_path, "--no-nvml", "--log", str(log), "--telemetry", str(tmp_path / "t.jsonl"),
        "--format", "json", "--report", str(report), *options, "--", sys.executable, str(STEP_FAULTS), fault,
        timeout=120,
    )  # fmt: skip
    assert done.returncode == 1, done.stderr.decode()[-2000:]
    return log.read_text(), json.loads(report.read_text())


def test_the_probe_tells_a_missing_backward_from_a_missing_step_that_print_alike(tmp_path):
    """The two runs print the same losses and the same verdict; under watch the training probe's
    line (the log's last) says which part of the step ran, and triage names each first. With
    `--no-probe` the same logs are said as a tie."""
    named = {}
    for fault, cause in (("no-backward", "missing-backward"), ("no-step", "missing-optimizer-step")):
        log, report = _watched_causes(tmp_path, fault)
        assert log.splitlines()[-1].startswith("[trainwreck probe] ")
        assert report["causes"][0]["id"] == cause and not report["tied"], report["causes"][:2]
        named[fault] = log
    bare, report = _watched_causes(tmp_path, "no-step", "--no-probe")
    assert "[trainwreck probe]" not in bare
    assert set(report["tied"]) == {"missing-backward", "missing-optimizer-step"}
    strip = [line for line in named["no-step"].splitlines() if not line.startswith("[trainwreck probe]")]
    assert strip == bare.splitlines()  # the probe added its line and changed nothing else


def test_the_probe_names_gradients_kept_across_steps(tmp_path):
    log, report = _watched_causes(tmp_path, "no-zero-grad")
    assert report["causes"][0]["id"] == "missing-zero-grad", report["causes"][:2]
    assert any(s["name"] == "probe-gradients-kept" for s in report["symptoms"])


@pytest.mark.parametrize("command", [["no-such-command-trainwreck"], [sys.executable, "-c", "print('done')"]])
def test_the_probes_folder_is_removed_however_the_run_ends(tmp_path, command):
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    env = dict(os.environ, TMPDIR=str(scratch))
    subprocess.run(
        [sys.executable, "-m", "triage.cli", "watch", "--no-nvml", "--", *command],
        cwd=tmp_path, capture_output=True, timeout=60, env=env,
    )  # fmt: skip
    assert list(scratch.iterdir()) == []
