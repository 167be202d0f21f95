"""Fixtures every test folder may use. pytest puts tests/, tests/injector and tests/triage on the
import path (`pythonpath` in pyproject.toml), so helper modules such as `github_api` and
`triage_corpus` import by name."""

from __future__ import annotations

import pytest
from github_api import TOKEN, GitHubAPI


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
