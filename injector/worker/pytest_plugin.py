"""The pytest plugin through which a worker takes over pytest's run loop.

pytest imports the guard's test modules and collects them once, as usual; then, instead of
running them, `pytest_runtestloop` hands the collected items to the worker, which serves the
campaign's commands until it is told to stop.
"""

from __future__ import annotations

import time

import pytest

from injector.worker.output import report_message


class TakeOver:
    def __init__(self, worker) -> None:
        self.worker = worker
        self.errors: list[str] = []

    def pytest_collectreport(self, report) -> None:
        if report.failed:
            self.errors.append(f"{report.nodeid or 'collection'}: {report_message(report)}")

    @pytest.hookimpl(hookwrapper=True)
    def pytest_fixture_setup(self, fixturedef, request):
        if fixturedef.scope == "function":
            yield
            return
        recording = self.worker.shared_fixture(fixturedef.argname)
        next(recording)
        try:
            yield
        finally:
            next(recording, None)

    def pytest_runtestloop(self, session) -> bool:
        if self.errors:
            self.worker.fatal("the guard's tests do not import: " + self.errors[0])
        elif not session.items:
            self.worker.fatal("the guard collected no tests")
        else:
            self.worker.serve(session.items, startup=time.monotonic() - self.worker.started)
        return True
