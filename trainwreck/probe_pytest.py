"""The training probe under pytest: each test's failure report ends with what its run trained.

Registered (`-p trainwreck.probe_pytest`, or as a plugin object) where a probed run goes
through pytest (`injector run --calibrate` with a pytest guard). It does nothing unless the
probe is installed in this process (`trainwreck.probe.install`). Each test's counts start at its
setup (the processes it starts included) and go, as the probe's one line, into a section of
the report of the phase where it ended: pytest prints it under the failure's traceback.
"""

from __future__ import annotations

from collections.abc import Generator

import pytest

from trainwreck import probe

SECTION = "trainwreck probe"


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    folder = probe.folder()
    if folder is not None:
        probe.clear(folder)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    report = yield
    folder = probe.folder()
    if folder is not None and (report.when == "call" or (report.when == "setup" and not report.passed)):
        counts = probe.collect(folder)
        if not counts.empty:
            report.sections.append((f"{SECTION} {report.when}", counts.line()))
    return report
