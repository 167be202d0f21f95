"""Fixtures every test folder may use. pytest puts tests/, tests/injector and tests/triage on the
import path (`pythonpath` in pyproject.toml), so helper modules such as `github_api` and
`triage_corpus` import by name."""

from __future__ import annotations

import psutil
import pytest
from github_api import TOKEN, GitHubAPI

# The two files whose tests run campaigns of fresh processes for minutes (250-330 s of CPU each).
# `pytest -n 3 --dist loadfile --no-loadscope-reorder` hands files to its workers in collection
# order: these go first, so that the rest fills in around them (in xdist's default order, files
# with the most tests first, the DDP file, with three, started last and its worker ran on for
# 130 s after the other had finished).
LONGEST_FIRST = ("tests/injector/test_differential_processes.py", "tests/injector/test_differential_ddp.py")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    rank = {path: index for index, path in enumerate(LONGEST_FIRST)}
    items.sort(key=lambda item: rank.get(item.nodeid.split("::")[0], len(rank)))


@pytest.fixture()
def github_api(monkeypatch: pytest.MonkeyPatch):
    """A started `GitHubAPI` with pull request acme/trainer#7; GITHUB_TOKEN set to its token,
    GITHUB_API_URL unset, proxies bypassed for loopback."""
    monkeypatch.setenv("GITHUB_TOKEN", TOKEN)
    monkeypatch.delenv("GITHUB_API_URL", raising=False)
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")
    monkeypatch.setenv("no_proxy", "127.0.0.1,localhost")
    with GitHubAPI() as api:
        api.add_pull("acme", "trainer", 7)
        yield api


def _ours_to_keep(process: psutil.Process) -> bool:
    """multiprocessing's own helpers (the forkserver the log reader may start, the resource
    tracker) live as long as the test session by design, and end with it."""
    try:
        command = " ".join(process.cmdline())
    except psutil.Error:
        return True
    return "multiprocessing.forkserver" in command or "multiprocessing.resource_tracker" in command


@pytest.fixture(scope="session", autouse=True)
def no_process_left_behind():
    """The session fails if any test left a process of its own running (they are ended too)."""
    yield
    left = []
    for process in psutil.Process().children(recursive=True):
        try:
            if process.status() != psutil.STATUS_ZOMBIE and not _ours_to_keep(process):
                left.append(f"{process.pid} {' '.join(process.cmdline())[:120]}")
                process.kill()
        except psutil.Error:
            continue
    assert not left, "tests left processes running:\n" + "\n".join(left)
