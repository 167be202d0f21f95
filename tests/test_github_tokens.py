"""A token with a backslash or quotes never leaks, escaped or not, through any error path.

Servers and proxies echo what they were sent in many encodings: a JSON string, a Python repr,
a URL, an HTML page. Each error `triage comment` can meet (refused token, no permission, rate
limit, not found, validation, a server that stays down, a reply that is not JSON, a failed
update or delete) is provoked against the loopback GitHub API with a body that echoes the token
in one of those forms; the one-line error must hold none of them.
"""

from __future__ import annotations

import functools
import html
import json
import time
from concurrent.futures import ThreadPoolExecutor
from urllib.parse import quote, quote_plus

import pytest
from github_api import BOT, GitHubAPI, Raw
from triage_corpus import one_log

from trainwreck import comment, github
from triage import cli, render

WEIRD = "ghp_W3ird" + "ab\\\"cd\\\\ef'gh" + "Z9"  # ghp_W3irdab\"cd\\ef'ghZ9
LOG = one_log("shape-mismatch")
PR = ["--repo", "acme/trainer", "--pr", "7"]

ECHOES = {
    "raw": lambda t: f"token {t} is not allowed",
    "json": lambda t: json.dumps({"detail": f"token {t}"}) + " (not GitHub's format)",
    "repr": lambda t: f"headers={ {'Authorization': 'token ' + t}!r}",
    "bytes-repr": lambda t: f"got {('token ' + t).encode()!r}",
    "url": lambda t: f"GET /login?token={quote(t, safe='')}&next=/",
    "url-lower": lambda t: f"GET /login?token={quote(t, safe='').lower()}",
    "form": lambda t: f"token={quote_plus(t)}",
    "html": lambda t: f"<html><body><p>Bad token: {html.escape(t)}</p></body></html>",
    "json-in-json": lambda t: json.dumps({"detail": json.dumps({"token": t})}),
}


def leaked(text: str) -> list[str]:
    """Which forms of WEIRD `text` holds (any part of it that identifies it counts)."""
    forms = {
        "raw": WEIRD,
        "json": json.dumps(WEIRD)[1:-1],
        "repr": repr(WEIRD)[1:-1],
        "url": quote(WEIRD, safe=""),
        "html": html.escape(WEIRD),
    }
    found = [name for name, form in forms.items() if form in text]
    return found + (["W3ird"] if "W3ird" in text else []) + (["ef'gh"] if "ef'gh" in text else [])


@pytest.fixture()
def api(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("GITHUB_TOKEN", WEIRD)
    monkeypatch.delenv("GITHUB_API_URL", raising=False)
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")
    monkeypatch.setenv("no_proxy", "127.0.0.1,localhost")
    now = [time.time()]

    def sleep(seconds: float) -> None:
        now[0] += seconds

    monkeypatch.setattr(github, "Policy", functools.partial(github.Policy, sleep=sleep, clock=lambda: now[0]))
    with GitHubAPI() as server:
        server.tokens[WEIRD] = BOT
        server.add_pull("acme", "trainer", 7)
        yield server


def one_line(capsys, server: GitHubAPI) -> str:
    code = cli.main(["comment", str(LOG), *PR, "--api-url", server.url])
    out, err = capsys.readouterr()
    assert code == 4, err
    # waits may be announced; the failure itself is one line, the last
    assert err.count("triage: error:") == 1 and err.splitlines()[-1].startswith("triage: error:")
    assert "Traceback" not in err
    return out + err


PATHS = {
    # name: (how the API fails, what the one line says)
    "refused-token": (dict(status=401, method="GET"), "GitHub refused the token"),
    "no-permission": (dict(status=403, method="POST"), "may not comment on acme/trainer#7"),
    "rate-limit": (
        dict(
            status=403,
            times=100,
            headers={"x-ratelimit-remaining": "0", "x-ratelimit-reset": str(int(time.time()) + 60)},
        ),
        "rate limit still held",
    ),
    "not-found": (dict(status=404, method="GET"), "not found"),
    "validation": (dict(status=422, method="POST"), "GitHub refused the request"),
    "server-down": (dict(status=502, times=100), "kept failing"),
    "not-json-ok": (dict(status=200, method="GET"), "unexpected reply"),
}


@pytest.mark.parametrize("echo", sorted(ECHOES))
@pytest.mark.parametrize("path", sorted(PATHS))
def test_no_error_path_leaks_the_token_in_any_encoding(api, capsys, path, echo):
    fault, says = PATHS[path]
    api.fail(raw=Raw(ECHOES[echo](WEIRD), "text/html" if echo == "html" else "text/plain"), **fault)
    text = one_line(capsys, api)
    assert says in text
    assert leaked(text) == []


@pytest.mark.parametrize("echo", sorted(ECHOES))
def test_a_failed_update_leaks_nothing(api, capsys, echo):
    api.add_comment("acme", "trainer", 7, render.MARKER + "\nan older triage", user=BOT)
    api.fail(403, method="PATCH", raw=Raw(ECHOES[echo](WEIRD)))
    text = one_line(capsys, api)
    assert "may not comment" in text and leaked(text) == []


@pytest.mark.parametrize("echo", sorted(ECHOES))
def test_a_failed_delete_of_a_duplicate_leaks_nothing(api, echo):
    # two runs race to create (the API holds both creates until both arrive); deleting the
    # duplicate is refused, with the token echoed
    api.hold_posts(2)
    api.fail(403, method="DELETE", times=2, raw=Raw(ECHOES[echo](WEIRD)))

    def run(body: str) -> str:
        try:
            comment.post(
                body,
                marker="<!-- m -->",
                target=comment.Target("acme", "trainer", 7),
                token=github.Secret(WEIRD),
                api=api.url,
                policy=github.Policy(),
            )
        except github.GitHubError as error:
            return str(error) + repr(error)
        return ""

    with ThreadPoolExecutor(2) as pool:
        errors = [e for e in pool.map(run, ["<!-- m -->\none", "<!-- m -->\ntwo"]) if e]
    assert errors and all("may not comment" in e and leaked(e) == [] for e in errors)


def test_the_scrubbed_forms_cover_what_a_server_may_echo():
    secret = github.Secret(WEIRD)
    for name, echo in ECHOES.items():
        assert leaked(secret.scrub(echo(WEIRD))) == [], name
    assert secret.scrub("nothing secret here") == "nothing secret here"
