"""Talking to the GitHub REST API with github3.py: the token, the API address, retries, failures.

Owns what every GitHub call shares. The token comes from `GITHUB_TOKEN` and is kept out of every
repr, log line and error message (`Secret`). The API base URL is `--api-url`, else
`$GITHUB_API_URL` (set by GitHub Actions, GitHub Enterprise included), else github.com's. The
session behind github3.py retries server errors (5xx) and dropped connections with capped,
jittered exponential backoff, and waits out GitHub's primary rate limit (until
`x-ratelimit-reset`) and secondary rate limits (`retry-after`), up to `Policy.max_wait`. Whatever
still fails becomes a `GitHubError`: one line, token scrubbed, exit code 4.
"""

from __future__ import annotations

import functools
import html
import json
import os
import random
import re
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from email.utils import parsedate_to_datetime
from typing import Any
from urllib.parse import quote, quote_plus, urlsplit

import github3
import requests
from github3 import exceptions as gh
from github3.session import GitHubSession
from requests.adapters import HTTPAdapter
from urllib3.util.retry import Retry

from trainwreck.errors import TrainwreckError, UsageError

DEFAULT_API_URL = "https://api.github.com"
EXIT_GITHUB = 4
TOKEN_VARIABLE = "GITHUB_TOKEN"

_RETRY_STATUSES = frozenset({500, 502, 503, 504})
_LOOPBACK = frozenset({"127.0.0.1", "localhost", "::1"})
_TOKEN_TEXT = re.compile(r"[\x21-\x7e]+")  # printable ASCII, no spaces: what a header can carry
_SECONDARY = re.compile(r"secondary rate limit|abuse detection", re.IGNORECASE)


class GitHubError(TrainwreckError):
    """GitHub said no, or could not be reached: no token, no permission, no such PR, API down."""

    exit_code = EXIT_GITHUB


class Secret:
    """A token that stays out of reprs, str() and pickles; `reveal()` is the one way to read it."""

    __slots__ = ("_value",)

    def __init__(self, value: str) -> None:
        self._value = value

    def reveal(self) -> str:
        return self._value

    def scrub(self, text: str) -> str:
        """`text` with the token, wherever it occurs, replaced by `***`: as it is, and in the
        escaped forms an error body or a message may carry it in (JSON, Python repr, URL and
        HTML encoding, and those nested), so a token with a backslash or a quote cannot leak."""
        if not self._value:
            return text
        for form in _escaped_forms(self._value):
            text = form.sub("***", text)
        return text

    def __repr__(self) -> str:
        return "Secret('***')"

    __str__ = __repr__

    def __reduce__(self) -> str | tuple[Any, ...]:
        raise TypeError("a Secret cannot be pickled")


def _escapes(text: str) -> set[str]:
    """`text` as each escaping that may have been applied to it shows it."""
    backslashed = text.replace("\\", "\\\\")
    return {
        json.dumps(text)[1:-1],
        json.dumps(text, ensure_ascii=False)[1:-1],
        repr(text)[1:-1],
        repr(text.encode())[2:-1],
        # a repr or a shell string that escaped both quotes, or only one kind of them
        backslashed.replace("'", "\\'"),
        backslashed.replace('"', '\\"'),
        backslashed.replace("'", "\\'").replace('"', '\\"'),
        quote(text, safe=""),
        quote(text),
        quote_plus(text),
        html.escape(text),
        html.escape(text, quote=False),
        html.escape(text).replace("&#x27;", "&#39;"),
    }


@functools.cache
def _escaped_forms(value: str) -> tuple[re.Pattern[str], ...]:
    """Patterns for `value` and its escaped forms (two levels deep), longest first; the hex
    digits of percent-encoding match in either case."""
    forms = {value}
    for _ in range(2):
        forms |= set().union(*(_escapes(form) for form in forms))
    patterns = []
    for form in sorted(forms, key=len, reverse=True):
        pattern = re.escape(form)
        if "%" in form:
            pattern = re.sub(r"%([0-9A-F]{2})", lambda m: "%(?i:" + m.group(1) + ")", pattern)
        patterns.append(re.compile(pattern))
    return tuple(patterns)


def token_from_env(environ: Mapping[str, str] = os.environ) -> Secret | None:
    """The token in `GITHUB_TOKEN`, or None when it is unset or empty."""
    value = environ.get(TOKEN_VARIABLE, "").strip()
    if not value:
        return None
    if not _TOKEN_TEXT.fullmatch(value):
        # never echo it: say what is wrong, not what it is
        raise GitHubError(
            f"{TOKEN_VARIABLE} holds characters no GitHub token has (spaces, quotes or line breaks inside it?)"
        )
    return Secret(value)


def api_url(text: str | None = None, environ: Mapping[str, str] = os.environ) -> str:
    """The REST API base URL: `text`, else `$GITHUB_API_URL`, else github.com's. Plain http is
    refused except to this machine, so the token never crosses a network in clear text."""
    url = (text or environ.get("GITHUB_API_URL") or DEFAULT_API_URL).strip().rstrip("/")
    try:
        parts = urlsplit(url)
        host = parts.hostname
        parts.port  # noqa: B018 -- raises on a malformed port
    except ValueError:
        raise UsageError(f"not a URL: {url!r}") from None
    if parts.username or parts.password:
        raise UsageError("the API URL must not hold credentials: the token comes from GITHUB_TOKEN")
    if parts.scheme not in ("https", "http") or not host or parts.query or parts.fragment:
        raise UsageError(f"not an API base URL: {url!r} (e.g. https://github.example.com/api/v3)")
    if parts.scheme == "http" and host not in _LOOPBACK:
        raise UsageError(f"refusing to send the token to {host} over plain http: use https")
    return url


def _quiet(_: str) -> None:
    pass


@dataclass(frozen=True)
class Policy:
    """How hard to try. `sleep`, `clock` (epoch seconds) and `jitter` (0..1) are injectable so
    that tests can check the waits without waiting; `notify` hears one line per wait."""

    tries: int = 5  # per request, for server errors and dropped connections
    backoff: float = 1.0  # the first retry's delay; doubled each time, jittered
    backoff_cap: float = 30.0
    max_wait: float = 900.0  # the longest rate-limit wait accepted; longer is a GitHubError
    rate_limit_waits: int = 3  # per request
    sleep: Callable[[float], None] = time.sleep
    clock: Callable[[], float] = time.time
    jitter: Callable[[], float] = random.random
    notify: Callable[[str], None] = _quiet

    def backoff_delay(self, failures: int) -> float:
        """The delay before retry number `failures` (1-based): half fixed, half random."""
        delay = min(self.backoff_cap, self.backoff * 2 ** (failures - 1))
        return delay / 2 + self.jitter() * delay / 2


def rate_limit_wait(response: requests.Response, now: float, waits: int = 0) -> float | None:
    """Seconds to wait before retrying a rate-limited reply; None when it is not one.

    GitHub's rules: a `retry-after` header says how long; `x-ratelimit-remaining: 0` means
    wait until `x-ratelimit-reset` (epoch seconds); a secondary limit without either means at
    least a minute, longer on each repeat.
    """
    if response.status_code not in (403, 429):
        return None
    headers = response.headers
    retry_after = headers.get("retry-after")
    if retry_after:
        seconds = _seconds(retry_after, now)
        if seconds is not None:
            return seconds
    if headers.get("x-ratelimit-remaining") == "0" and headers.get("x-ratelimit-reset"):
        try:
            return max(0.0, float(headers["x-ratelimit-reset"]) - now) + 1.0  # +1: clock skew
        except ValueError:
            pass
    if response.status_code == 429 or _SECONDARY.search(response.text or ""):
        return 60.0 * 2**waits
    return None


def _seconds(retry_after: str, now: float) -> float | None:
    try:
        return max(0.0, float(retry_after))
    except ValueError:
        pass
    try:  # the HTTP-date form
        return max(0.0, parsedate_to_datetime(retry_after).timestamp() - now)
    except (TypeError, ValueError):
        return None


def _minutes(seconds: float) -> str:
    if seconds < 10:
        return f"{seconds:.1f} s"
    return f"{seconds:.0f} s" if seconds < 120 else f"{seconds / 60:.0f} min"


class _TokenAuth(requests.auth.AuthBase):
    """Sends the token in the Authorization header, and only there."""

    def __init__(self, token: Secret) -> None:
        self._token = token

    def __call__(self, request: requests.PreparedRequest) -> requests.PreparedRequest:
        request.headers["Authorization"] = f"token {self._token.reveal()}"
        return request

    def __repr__(self) -> str:
        return "token ***"


class _Retry(Retry):
    """urllib3's retry of server errors (5xx) and dropped connections, paced and announced by a
    `Policy`: capped, jittered exponential backoff through its injectable sleep, one line per
    wait. A POST is retried only when its connection failed before it was sent (urllib3's
    connect errors): one that reached GitHub may have created its comment, and the caller
    looks before posting again."""

    policy: Policy = Policy()

    def new(self, **params: Any) -> _Retry:
        retry = super().new(**params)
        retry.policy = self.policy
        return retry

    def get_backoff_time(self) -> float:
        return self.policy.backoff_delay(max(1, len(self.history)))

    def sleep(self, response: Any = None) -> None:
        delay = self.get_backoff_time()
        last = self.history[-1] if self.history else None
        if last is not None and last.status:
            why = f"the GitHub API answered {last.status}"
        else:
            reason = connection_reason(last.error) if last is not None and last.error else "connection failed"
            why = f"cannot reach the GitHub API ({reason})"
        self.policy.notify(f"{why}; retrying in {_minutes(delay)}")
        self.policy.sleep(delay)


def _retry(policy: Policy) -> _Retry:
    retry = _Retry(
        total=policy.tries - 1,
        status_forcelist=_RETRY_STATUSES,
        allowed_methods=Retry.DEFAULT_ALLOWED_METHODS | {"PATCH"},
        respect_retry_after_header=False,
        raise_on_status=False,
        redirect=False,
    )
    retry.policy = policy
    return retry


class _Session(GitHubSession):
    """github3.py's session: urllib3 retries server errors and dropped connections (`_Retry`,
    mounted on both schemes), and `request` waits out GitHub's rate limits, which urllib3 does
    not know (the primary limit is a 403 with `x-ratelimit-remaining: 0`). Every request
    github3.py makes, each page of a listing too, goes through both."""

    def __init__(self, policy: Policy) -> None:
        super().__init__()
        self.policy = policy
        adapter = HTTPAdapter(max_retries=_retry(policy))
        self.mount("https://", adapter)
        self.mount("http://", adapter)

    def request(self, method, url, *args, **kwargs):  # requests' signature
        policy = self.policy
        waits = 0
        while True:
            response = super().request(method, url, *args, **kwargs)
            wait = rate_limit_wait(response, policy.clock(), waits)
            if wait is None:
                return response
            waits += 1
            if waits > policy.rate_limit_waits:
                return response  # github3.py raises; `failure` says it is the rate limit
            if wait > policy.max_wait:
                until = time.strftime("%H:%M:%S UTC", time.gmtime(policy.clock() + wait))
                raise GitHubError(
                    f"GitHub's rate limit holds until {until} (in {_minutes(wait)}), "
                    f"longer than the {_minutes(policy.max_wait)} this command "
                    "waits; nothing was written"
                )
            policy.notify(f"GitHub rate limit reached ({response.status_code}); retrying in {_minutes(wait)}")
            policy.sleep(wait)


def connect(url: str, token: Secret, policy: Policy = Policy()) -> github3.GitHub:
    """A github3.py client for the API at `url` (already checked by `api_url`), with `token`."""
    session = _Session(policy)
    session.base_url = url
    session.auth = _TokenAuth(token)
    return github3.GitHub(session=session)


def connection_reason(error: BaseException) -> str:
    """A few words for why a connection failed, instead of urllib3's paragraph."""
    text = str(error)
    if isinstance(error, requests.Timeout) or "timed out" in text:
        return "timed out"
    if isinstance(error, requests.exceptions.SSLError):
        return "TLS error"
    if "refused" in text:
        return "connection refused"
    if re.search(r"resolve|Name or service not known|nodename nor servname|getaddrinfo", text):
        return "host not found"
    return "connection failed"


def _one_line(text: object, token: Secret | None, limit: int = 200) -> str:
    if isinstance(text, bytes):  # github3.py keeps a body that is not JSON as bytes
        text = text.decode("utf-8", "replace")
    line = " ".join(str(text).split())
    if token is not None:
        line = token.scrub(line)
    return line if len(line) <= limit else line[: limit - 1] + "…"


def failure(
    error: BaseException, *, api: str, what: str, token: Secret | None, policy: Policy = Policy()
) -> GitHubError:
    """The one-line GitHubError for a github3.py or requests failure while working on `what`
    (e.g. `owner/name#7`); the token, should any message hold it, is scrubbed."""
    if isinstance(error, gh.ConnectionError):
        return GitHubError(
            f"cannot reach the GitHub API at {api} ({connection_reason(error.exception)}) after {policy.tries} tries"
        )
    if isinstance(error, gh.GitHubError) and error.code is not None and error.code >= 400:
        code = error.code
        message = _one_line(error.msg or "", token)
        response = error.response
        if code == 401:
            return GitHubError(f"GitHub refused the token in {TOKEN_VARIABLE} ({code} {message})")
        if code in (403, 429) and response is not None and rate_limit_wait(response, policy.clock()) is not None:
            return GitHubError(
                f"GitHub's rate limit still held after {policy.rate_limit_waits} "
                f"waits ({code} {message}); nothing was written"
            )
        if code == 403:
            return GitHubError(
                f"the token may not comment on {what} ({code} {message}); it needs "
                "write access to pull requests (`pull-requests: write` in a workflow)"
            )
        if code == 404:
            return GitHubError(
                f"{what} not found ({code}): check the repository and the number, "
                "and that the token can see the repository"
            )
        if code >= 500:
            return GitHubError(f"the GitHub API at {api} kept failing ({code} {message}) after {policy.tries} tries")
        return GitHubError(f"GitHub refused the request for {what} ({code} {message})")
    detail = _one_line(getattr(error, "msg", None) or type(error).__name__, token, 120)
    return GitHubError(f"unexpected reply from the GitHub API at {api} ({detail})")


@contextmanager
def reporting(*, api: str, what: str, token: Secret | None, policy: Policy = Policy()) -> Iterator[None]:
    """Turn github3.py's and requests' exceptions inside the block into one-line GitHubErrors.
    The original is dropped (`from None`) so no traceback can carry what it held."""
    try:
        yield
    except GitHubError:
        raise
    except (gh.GitHubException, requests.RequestException, ValueError, KeyError) as error:
        raise failure(error, api=api, what=what, token=token, policy=policy) from None
