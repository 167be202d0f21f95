"""A small GitHub REST API on 127.0.0.1, for tests that run the real github3.py client and the
real HTTP stack against it (no mocks of Python objects).

It speaks what keeping a sticky PR comment needs:

    GET    /repos/{owner}/{name}/issues/{n}               a pull request (as an issue); 404 if unknown
    GET    /repos/{owner}/{name}/issues/{n}/comments      per_page/page, with a Link header
    POST   /repos/{owner}/{name}/issues/{n}/comments      create a comment (201)
    GET    /repos/{owner}/{name}/issues/comments/{id}     one comment
    PATCH  /repos/{owner}/{name}/issues/comments/{id}     update a comment
    DELETE /repos/{owner}/{name}/issues/comments/{id}     delete a comment (204)

optionally under a path prefix (`/api/v3`, as GitHub Enterprise serves it). A missing or unknown
token gets 401, a read-only token 403 on writes; every reply carries `x-ratelimit-*` headers.
Failures are injected in order (`fail`, `primary_rate_limit`, `secondary_rate_limit`), each for
the next matching request(s); `hold_posts(n)` makes n concurrent creates meet before any happens. Every request is recorded (method, path, query, headers, body).

Use the `github_api` fixture (import it into the test module), or `GitHubAPI` as a context manager.
"""

from __future__ import annotations

import html
import itertools
import json
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlencode, urlsplit

TOKEN = "ghp_loopbackTestToken0123456789abcdefXYZ"  # distinctive: tests grep for it
READ_ONLY_TOKEN = "ghp_readOnlyTestToken0123456789abcdefXYZ"
BOT = "trainwreck-bot"
RATE_LIMIT = 5000


@dataclass(frozen=True)
class Request:
    """One request as the server saw it."""

    method: str
    path: str  # without the query and without the prefix
    query: dict[str, list[str]]
    headers: dict[str, str]
    body: str


@dataclass
class Fault:
    """A reply to give instead of (or, with `after_apply`, after doing) the next requests."""

    status: int
    times: int = 1
    method: str | None = None  # only requests with this method; None: any
    headers: dict[str, str] = field(default_factory=dict)
    message: str = "Server Error"
    after_apply: bool = False  # do the request, then reply with the fault (a lost reply)
    raw: Raw | None = None  # a body that is not GitHub's JSON (a proxy's page), sent instead


@dataclass(frozen=True)
class Raw:
    """A reply body sent as it is, with its own content type."""

    text: str
    content_type: str = "text/plain; charset=utf-8"


@dataclass
class _Comment:
    id: int
    repo: tuple[str, str]
    number: int
    body: str
    user: str
    created_at: str
    updated_at: str


def _now_iso() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


class GitHubAPI:
    """The server and its state: pull requests, comments, tokens, queued faults, requests seen."""

    def __init__(self, *, prefix: str = "", per_page_cap: int = 100) -> None:
        self.prefix = prefix.rstrip("/")
        self.per_page_cap = per_page_cap
        self.tokens = {TOKEN: BOT, READ_ONLY_TOKEN: "reader"}
        self.read_only = {READ_ONLY_TOKEN}
        self.pulls: set[tuple[str, str, int]] = set()
        self.issues: set[tuple[str, str, int]] = set()  # numbers that are issues, not pull requests
        self.requests: list[Request] = []
        self.faults: list[Fault] = []
        self._comments: dict[int, _Comment] = {}
        self._ids = itertools.count(1001)
        self._remaining = RATE_LIMIT
        self._lock = threading.Lock()
        self._post_barrier: threading.Barrier | None = None
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # ------------------------------------------------------------ lifecycle

    def start(self) -> GitHubAPI:
        api = self

        class Handler(_Handler):
            server_api = api

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, args=(0.05,), daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def __enter__(self) -> GitHubAPI:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def root(self) -> str:
        assert self._server is not None, "start() the server first"
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    @property
    def url(self) -> str:
        """The API base URL to give the client (`--api-url`)."""
        return self.root + self.prefix

    # ------------------------------------------------------------ state for tests

    def add_pull(self, owner: str, name: str, number: int) -> None:
        self.pulls.add((owner, name, number))

    def add_issue(self, owner: str, name: str, number: int) -> None:
        self.issues.add((owner, name, number))

    def add_comment(self, owner: str, name: str, number: int, body: str, user: str = "someone") -> int:
        with self._lock:
            return self._create(owner, name, number, body, user).id

    def comments(self, owner: str, name: str, number: int) -> list[str]:
        """The bodies of the comments on a PR, oldest first."""
        with self._lock:
            return [c.body for c in self._sorted() if c.repo == (owner, name) and c.number == number]

    def writes(self) -> list[Request]:
        return [r for r in self.requests if r.method in ("POST", "PATCH", "PUT", "DELETE")]

    # ------------------------------------------------------------ faults

    def fail(
        self,
        status: int = 502,
        times: int = 1,
        *,
        method: str | None = None,
        after_apply: bool = False,
        message: str = "Server Error",
        raw: Raw | None = None,
        headers: dict[str, str] | None = None,
    ) -> None:
        """The next `times` matching requests get `status` (after being carried out, with
        `after_apply`: the reply is lost, the change is not), with GitHub's JSON error body
        holding `message`, or the `raw` body instead."""
        self.faults.append(Fault(status, times, method, dict(headers or {}), message, after_apply, raw))

    def primary_rate_limit(self, reset: float, *, times: int = 1, status: int = 403, method: str | None = None) -> None:
        """The primary limit is exhausted until `reset` (epoch seconds)."""
        self.faults.append(
            Fault(
                status,
                times,
                method,
                {"x-ratelimit-remaining": "0", "x-ratelimit-reset": str(int(reset))},
                "API rate limit exceeded for installation ID 1.",
            )
        )

    def secondary_rate_limit(
        self, retry_after: int | None, *, times: int = 1, status: int = 403, method: str | None = None
    ) -> None:
        """A secondary (abuse) limit, with a `retry-after` header or (None) only its message."""
        headers = {"retry-after": str(retry_after)} if retry_after is not None else {}
        self.faults.append(
            Fault(
                status,
                times,
                method,
                headers,
                "You have exceeded a secondary rate limit. Please wait a few minutes before you try again.",
            )
        )

    def hold_posts(self, parties: int, timeout: float = 10.0) -> None:
        """Hold every POST until `parties` of them have arrived, then carry them all out: the
        race of runs that each found no comment and each create one."""
        self._post_barrier = threading.Barrier(parties, timeout=timeout)

    # ------------------------------------------------------------ internals (under the lock)

    def _sorted(self) -> list[_Comment]:
        return sorted(self._comments.values(), key=lambda c: c.id)

    def _create(self, owner: str, name: str, number: int, body: str, user: str) -> _Comment:
        now = _now_iso()
        comment = _Comment(next(self._ids), (owner, name), number, body, user, now, now)
        self._comments[comment.id] = comment
        return comment

    def _take_fault(self, method: str) -> Fault | None:
        for fault in self.faults:
            if fault.times > 0 and fault.method in (None, method):
                fault.times -= 1
                return fault
        return None

    def _rate_headers(self) -> dict[str, str]:
        self._remaining = max(0, self._remaining - 1)
        return {
            "x-ratelimit-limit": str(RATE_LIMIT),
            "x-ratelimit-remaining": str(self._remaining),
            "x-ratelimit-reset": str(int(time.time()) + 3600),
            "x-ratelimit-used": str(RATE_LIMIT - self._remaining),
            "x-ratelimit-resource": "core",
        }

    def _user(self, login: str) -> dict[str, object]:
        base = f"{self.url}/users/{login}"
        return {
            "login": login,
            "id": abs(hash(login)) % 10**8,
            "node_id": "U_" + login,
            "type": "User",
            "site_admin": False,
            "url": base,
            "html_url": f"{self.root}/{login}",
            "avatar_url": f"{self.root}/avatars/{login}",
            "gravatar_id": "",
            "followers_url": base + "/followers",
            "following_url": base + "/following{/other_user}",
            "gists_url": base + "/gists{/gist_id}",
            "starred_url": base + "/starred{/owner}{/repo}",
            "subscriptions_url": base + "/subscriptions",
            "organizations_url": base + "/orgs",
            "repos_url": base + "/repos",
            "events_url": base + "/events{/privacy}",
            "received_events_url": base + "/received_events",
        }

    def _issue_json(self, owner: str, name: str, number: int) -> dict[str, object]:
        api = f"{self.url}/repos/{owner}/{name}"
        data: dict[str, object] = {
            "id": 5000 + number,
            "node_id": f"I_{number}",
            "number": number,
            "title": "a change",
            "state": "open",
            "locked": False,
            "body": "",
            "body_html": "",
            "body_text": "",
            "url": f"{api}/issues/{number}",
            "html_url": f"{self.root}/{owner}/{name}/pull/{number}",
            "comments_url": f"{api}/issues/{number}/comments",
            "events_url": f"{api}/issues/{number}/events",
            "labels_url": f"{api}/issues/{number}/labels{{/name}}",
            "repository_url": api,
            "labels": [],
            "assignee": None,
            "assignees": [],
            "milestone": None,
            "closed_by": None,
            "comments": sum(1 for c in self._comments.values() if c.repo == (owner, name) and c.number == number),
            "created_at": "2024-01-01T00:00:00Z",
            "updated_at": _now_iso(),
            "closed_at": None,
            "user": self._user("author"),
            "author_association": "CONTRIBUTOR",
        }
        if (owner, name, number) in self.pulls:
            data["pull_request"] = {
                "url": f"{api}/pulls/{number}",
                "html_url": f"{self.root}/{owner}/{name}/pull/{number}",
            }
        return data

    def _comment_json(self, c: _Comment) -> dict[str, object]:
        owner, name = c.repo
        api = f"{self.url}/repos/{owner}/{name}"
        return {
            "id": c.id,
            "node_id": f"IC_{c.id}",
            "url": f"{api}/issues/comments/{c.id}",
            "html_url": f"{self.root}/{owner}/{name}/pull/{c.number}#issuecomment-{c.id}",
            "issue_url": f"{api}/issues/{c.number}",
            "body": c.body,
            "body_html": "<p>" + html.escape(c.body) + "</p>",
            "body_text": c.body,
            "user": self._user(c.user),
            "created_at": c.created_at,
            "updated_at": c.updated_at,
            "author_association": "NONE",
        }


def _error(status: int, message: str) -> tuple[int, dict[str, object]]:
    return status, {"message": message, "documentation_url": "https://docs.github.com/rest"}


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive, as GitHub: requests reuses the connection
    server_api: GitHubAPI

    def log_message(self, format: str, *args: object) -> None:  # quiet
        pass

    def do_GET(self) -> None:
        self._handle("GET")

    def do_POST(self) -> None:
        self._handle("POST")

    def do_PATCH(self) -> None:
        self._handle("PATCH")

    def do_DELETE(self) -> None:
        self._handle("DELETE")

    def _handle(self, method: str) -> None:
        api = self.server_api
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length).decode("utf-8", "replace") if length else ""
        split = urlsplit(self.path)
        path = split.path
        if api.prefix and path.startswith(api.prefix + "/"):
            path = path[len(api.prefix) :]
        query = parse_qs(split.query)
        barrier = api._post_barrier
        if method == "POST" and barrier is not None:
            barrier.wait()  # outside the lock: the other requests go on meanwhile
        with api._lock:
            api.requests.append(Request(method, path, query, dict(self.headers.items()), raw))
            fault = api._take_fault(method)
            headers = api._rate_headers()
            payload: object
            if fault is not None and not fault.after_apply:
                status, payload = _error(fault.status, fault.message)
                headers.update(fault.headers)
            else:
                status, payload, extra = self._route(api, method, path, query, raw)
                headers.update(extra)
                if fault is not None:  # carried out, but the reply is lost
                    status, payload = _error(fault.status, fault.message)
            if fault is not None and fault.raw is not None:
                payload = fault.raw
        self._reply(status, payload, headers)

    def _route(
        self, api: GitHubAPI, method: str, path: str, query: dict[str, list[str]], raw: str
    ) -> tuple[int, object, dict[str, str]]:
        auth = self.headers.get("Authorization", "")
        scheme, _, token = auth.partition(" ")
        if not auth:
            return (*_error(401, "Requires authentication"), {})
        if scheme.lower() not in ("token", "bearer") or token not in api.tokens:
            return (*_error(401, "Bad credentials"), {})
        if method != "GET" and token in api.read_only:
            return (*_error(403, "Resource not accessible by integration"), {})
        parts = path.strip("/").split("/")
        if len(parts) >= 5 and parts[0] == "repos" and parts[3] == "issues":
            owner, name = parts[1], parts[2]
            if parts[4] == "comments" and len(parts) == 6 and parts[5].isdigit():
                return self._one_comment(api, method, owner, name, int(parts[5]), raw)
            if parts[4].isdigit():
                number = int(parts[4])
                if (owner, name, number) not in api.pulls | api.issues:
                    return (*_error(404, "Not Found"), {})
                if len(parts) == 5 and method == "GET":
                    return 200, api._issue_json(owner, name, number), {}
                if len(parts) == 6 and parts[5] == "comments":
                    return self._issue_comments(api, method, owner, name, number, query, raw)
        return (*_error(404, "Not Found"), {})

    def _issue_comments(
        self, api: GitHubAPI, method: str, owner: str, name: str, number: int, query: dict[str, list[str]], raw: str
    ) -> tuple[int, object, dict[str, str]]:
        if method == "POST":
            body = _body(raw)
            if body is None:
                return (*_error(422, "Validation Failed"), {})
            if len(body) > 65_536:
                return (*_error(422, "Validation Failed: body is too long (maximum is 65536 characters)"), {})
            login = api.tokens[self.headers["Authorization"].partition(" ")[2]]
            return 201, api._comment_json(api._create(owner, name, number, body, login)), {}
        if method != "GET":
            return (*_error(404, "Not Found"), {})
        per_page = min(int(query.get("per_page", ["30"])[0]), 100, api.per_page_cap)
        page = max(1, int(query.get("page", ["1"])[0]))
        mine = [c for c in api._sorted() if c.repo == (owner, name) and c.number == number]
        pages = max(1, -(-len(mine) // per_page))
        shown = mine[(page - 1) * per_page : page * per_page]
        base = f"{api.url}/repos/{owner}/{name}/issues/{number}/comments"

        def link(to: int, rel: str) -> str:
            return f'<{base}?{urlencode({"per_page": per_page, "page": to})}>; rel="{rel}"'

        links = []
        if page < pages:
            links += [link(page + 1, "next"), link(pages, "last")]
        if page > 1:
            links += [link(1, "first"), link(page - 1, "prev")]
        return 200, [api._comment_json(c) for c in shown], ({"Link": ", ".join(links)} if links else {})

    def _one_comment(
        self, api: GitHubAPI, method: str, owner: str, name: str, comment_id: int, raw: str
    ) -> tuple[int, object, dict[str, str]]:
        comment = api._comments.get(comment_id)
        if comment is None or comment.repo != (owner, name):
            return (*_error(404, "Not Found"), {})
        if method == "GET":
            return 200, api._comment_json(comment), {}
        if method == "DELETE":
            del api._comments[comment_id]
            return 204, None, {}
        if method == "PATCH":
            body = _body(raw)
            if body is None:
                return (*_error(422, "Validation Failed"), {})
            if len(body) > 65_536:
                return (*_error(422, "Validation Failed: body is too long (maximum is 65536 characters)"), {})
            comment.body = body
            comment.updated_at = _now_iso()
            return 200, api._comment_json(comment), {}
        return (*_error(404, "Not Found"), {})

    def _reply(self, status: int, payload: object, headers: dict[str, str]) -> None:
        if isinstance(payload, Raw):
            data, content_type = payload.text.encode(), payload.content_type
        else:
            data = b"" if payload is None else json.dumps(payload).encode()
            content_type = "application/json; charset=utf-8"
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(data)))
        for key, value in headers.items():
            self.send_header(key, value)
        self.end_headers()
        self.wfile.write(data)


def _body(raw: str) -> str | None:
    try:
        data = json.loads(raw)
    except ValueError:
        return None
    body = data.get("body") if isinstance(data, dict) else None
    return body if isinstance(body, str) and body else None
