"""`triage comment` against a GitHub REST API on 127.0.0.1: the real github3.py client and HTTP
stack, one sticky comment per PR, retries and rate limits, failures as one line, no token leaks."""

from __future__ import annotations

import functools
import logging
import re
import time
import traceback
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from github_api import READ_ONLY_TOKEN, TOKEN, GitHubAPI
from markdown_it import MarkdownIt
from triage_corpus import one_log

from trainwreck import comment, github
from trainwreck.markdown import GITHUB_LIMIT, fence
from triage import cli, render
from triage.explain import explain

PR = ["--repo", "acme/trainer", "--pr", "7"]
FIRST = one_log("missing-zero-grad")
SECOND = one_log("shape-mismatch")


class FakeClock:
    """Time that passes only when someone sleeps."""

    def __init__(self) -> None:
        self.now = time.time()
        self.sleeps: list[float] = []

    def time(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.now += seconds


@pytest.fixture()
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture()
def policy(clock: FakeClock) -> github.Policy:
    return github.Policy(sleep=clock.sleep, clock=clock.time, jitter=lambda: 0.5)


@pytest.fixture()
def no_waiting(monkeypatch: pytest.MonkeyPatch, clock: FakeClock) -> FakeClock:
    """`triage comment` run in-process sleeps on the fake clock."""
    monkeypatch.setattr(github, "Policy", functools.partial(github.Policy, sleep=clock.sleep, clock=clock.time))
    return clock


def run(capsys, *args: object) -> tuple[int, str, str]:
    code = cli.main([str(a) for a in args])
    out, err = capsys.readouterr()
    assert TOKEN not in out + err
    return code, out, err


def post(api: GitHubAPI, body: str, policy: github.Policy, **kwargs) -> comment.Posted:
    return comment.post(
        body,
        marker="<!-- t -->",
        target=comment.Target("acme", "trainer", 7),
        token=github.Secret(TOKEN),
        api=api.url,
        policy=policy,
        **kwargs,
    )


def body_of(log: Path) -> str:
    return render.markdown(explain(log))


def marked(api: GitHubAPI, marker: str = render.MARKER) -> list[str]:
    return [b for b in api.comments("acme", "trainer", 7) if b.startswith(marker)]


def fences_are_closed(markdown: str) -> bool:
    """Every fence CommonMark finds ends with its own closing line (not at the end of the text)."""
    lines = markdown.splitlines()
    for token in MarkdownIt().parse(markdown):
        if token.type == "fence":
            closing = lines[token.map[1] - 1].strip()
            if not (set(closing) == {token.markup[0]} and len(closing) >= len(token.markup)):
                return False
    return True


# ---------------------------------------------------------------- one sticky comment


def test_two_runs_leave_one_comment_with_the_second_body(github_api, capsys):
    github_api.add_comment("acme", "trainer", 7, "LGTM", user="reviewer")
    code, out, _ = run(capsys, "comment", FIRST, *PR, "--api-url", github_api.url)
    assert code == 0 and out.startswith("triage: created the comment on acme/trainer#7: http://127.0.0.1:")
    code, out, _ = run(capsys, "comment", SECOND, *PR, "--api-url", github_api.url)
    assert code == 0 and "updated the comment on acme/trainer#7" in out
    assert marked(github_api) == [body_of(SECOND)]
    assert github_api.comments("acme", "trainer", 7)[0] == "LGTM"  # others' comments untouched
    assert [r.method for r in github_api.writes()] == ["POST", "PATCH"]


def test_an_unchanged_body_makes_no_write(github_api, capsys):
    assert run(capsys, "comment", FIRST, *PR, "--api-url", github_api.url)[0] == 0
    before = len(github_api.writes())
    code, out, _ = run(capsys, "comment", FIRST, *PR, "--api-url", github_api.url)
    assert code == 0 and "already up to date" in out
    assert len(github_api.writes()) == before == 1
    assert len(marked(github_api)) == 1


def test_the_marker_comment_is_found_on_page_2_of_3(github_api, capsys):
    github_api.per_page_cap = 2
    for n in range(2):
        github_api.add_comment("acme", "trainer", 7, f"review {n}")
    old = github_api.add_comment("acme", "trainer", 7, render.MARKER + "\nan old triage")
    for n in range(3):
        github_api.add_comment("acme", "trainer", 7, f"later {n}")
    code, _, _ = run(capsys, "comment", FIRST, *PR, "--api-url", github_api.url)
    assert code == 0
    (write,) = github_api.writes()
    assert (write.method, write.path) == ("PATCH", f"/repos/acme/trainer/issues/comments/{old}")
    pages = [r.query.get("page", ["1"])[0] for r in github_api.requests if r.path.endswith("/comments")]
    assert pages == ["1", "2"]  # followed the Link header, and stopped once found
    assert len(github_api.comments("acme", "trainer", 7)) == 6 and marked(github_api) == [body_of(FIRST)]


@pytest.mark.parametrize("runs", [2, 4])
def test_concurrent_first_runs_converge_on_one_comment(github_api, policy, runs):
    """Runs that all find no comment all create one (the fake API holds the creates until every
    run has sent its own); each then lists again and the extras are deleted."""
    github_api.add_comment("acme", "trainer", 7, "LGTM", user="reviewer")
    github_api.hold_posts(runs)
    bodies = [f"<!-- t -->\nrun {n}" for n in range(runs)]
    with ThreadPoolExecutor(runs) as pool:
        results = list(pool.map(lambda body: post(github_api, body, policy), bodies))
    creates = [r for r in github_api.writes() if r.method == "POST"]
    assert len(creates) == runs  # the race did happen: every run created a comment
    assert github_api.comments("acme", "trainer", 7)[0] == "LGTM"  # a person's comment stays
    (left,) = marked(github_api, "<!-- t -->")
    assert left in bodies
    oldest = min(r.comment_id for r in results)
    assert {r.comment_id for r in results} == {oldest}  # every run names the comment that was kept
    assert sum(r.method == "DELETE" for r in github_api.writes()) >= runs - 1


def test_concurrent_triage_comments_with_one_body_leave_it_once(github_api, policy):
    github_api.hold_posts(2)
    body = body_of(FIRST)
    with ThreadPoolExecutor(2) as pool:
        results = list(
            pool.map(
                lambda _: comment.post(
                    body,
                    marker=render.MARKER,
                    target=comment.Target("acme", "trainer", 7),
                    token=github.Secret(TOKEN),
                    api=github_api.url,
                    policy=policy,
                ),
                range(2),
            )
        )
    assert marked(github_api) == [body]
    assert sorted(r.action for r in results) == ["created", "unchanged"]


def test_github_enterprise_api_url_with_a_path_prefix(monkeypatch, capsys):
    monkeypatch.setenv("GITHUB_TOKEN", TOKEN)
    monkeypatch.setenv("NO_PROXY", "127.0.0.1")
    with GitHubAPI(prefix="/api/v3") as api:
        api.add_pull("acme", "trainer", 7)
        monkeypatch.setenv("GITHUB_API_URL", api.url)  # as GitHub Actions sets it on Enterprise
        assert run(capsys, "comment", FIRST, *PR)[0] == 0
        assert marked(api) == [body_of(FIRST)]
        assert all(r.headers.get("Authorization") == f"token {TOKEN}" for r in api.requests)


def test_dry_run_prints_the_body_and_writes_nothing(github_api, capsys):
    code, out, err = run(capsys, "comment", FIRST, *PR, "--api-url", github_api.url, "--dry-run")
    assert code == 0 and out == body_of(FIRST)
    assert "dry run: would create a comment on acme/trainer#7" in err
    assert github_api.writes() == []
    run(capsys, "comment", FIRST, *PR, "--api-url", github_api.url)
    code, _, err = run(capsys, "comment", SECOND, *PR, "--api-url", github_api.url, "--dry-run")
    assert "would update the comment" in err and len(github_api.writes()) == 1


def test_dry_run_without_a_token_reads_nothing(github_api, monkeypatch, capsys):
    monkeypatch.delenv("GITHUB_TOKEN")
    code, out, err = run(capsys, "comment", FIRST, *PR, "--api-url", github_api.url, "--dry-run")
    assert code == 0 and out.startswith(render.MARKER)
    assert "GITHUB_TOKEN is not set" in err and github_api.requests == []


# ---------------------------------------------------------------- retries and rate limits


def test_a_502_is_retried_with_backoff(github_api, policy, clock):
    github_api.fail(502, times=2)
    assert post(github_api, "<!-- t -->\nhello", policy).action == "created"
    assert clock.sleeps == [0.75, 1.5]  # 1 s then 2 s, jittered to 3/4
    assert github_api.comments("acme", "trainer", 7) == ["<!-- t -->\nhello"]


def test_backoff_is_capped_and_jittered():
    slow = github.Policy(backoff=1.0, backoff_cap=8.0, jitter=lambda: 1.0)
    assert [slow.backoff_delay(n) for n in range(1, 7)] == [1, 2, 4, 8, 8, 8]
    assert github.Policy(jitter=lambda: 0.0).backoff_delay(3) == 2.0  # half of 4 s fixed


@pytest.mark.parametrize("applied", [False, True], ids=["refused", "reply-lost"])
def test_a_failed_create_looks_again_and_never_duplicates(github_api, policy, applied):
    github_api.fail(502, method="POST", after_apply=applied)
    assert post(github_api, "<!-- t -->\nhello", policy).action == "created"
    assert github_api.comments("acme", "trainer", 7) == ["<!-- t -->\nhello"]
    assert [r.method for r in github_api.writes()] == (["POST"] if applied else ["POST", "POST"])


def test_the_primary_rate_limit_waits_for_the_reset(github_api, policy, clock):
    github_api.primary_rate_limit(reset=clock.now + 30)
    assert post(github_api, "<!-- t -->\nhello", policy).action == "created"
    assert len(clock.sleeps) == 1 and 29 <= clock.sleeps[0] <= 31
    limited = github_api.requests[0]
    assert limited.method == "GET" and github_api.requests[1].path == limited.path  # the same request again


@pytest.mark.parametrize("status", [403, 429])
def test_a_secondary_rate_limit_waits_retry_after(github_api, policy, clock, status):
    github_api.secondary_rate_limit(retry_after=7, status=status, method="POST")
    assert post(github_api, "<!-- t -->\nhello", policy).action == "created"
    assert clock.sleeps == [7]
    assert [r.method for r in github_api.writes()] == ["POST", "POST"]
    assert len(github_api.comments("acme", "trainer", 7)) == 1


def test_a_secondary_rate_limit_without_retry_after_waits_a_minute(github_api, policy, clock):
    github_api.secondary_rate_limit(retry_after=None)
    assert post(github_api, "<!-- t -->\nhello", policy).action == "created"
    assert clock.sleeps == [60]


def test_every_reply_carries_rate_limit_headers(github_api):
    import requests

    reply = requests.get(
        github_api.url + "/repos/acme/trainer/issues/7", headers={"Authorization": f"token {TOKEN}"}, timeout=5
    )
    assert reply.status_code == 200
    assert all(name in reply.headers for name in ("x-ratelimit-limit", "x-ratelimit-remaining", "x-ratelimit-reset"))


# ---------------------------------------------------------------- failures: one line, nothing posted


def one_line_error(err: str) -> str:
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("triage: error: "), err
    return lines[0]


def test_no_token_is_one_line_and_touches_nothing(github_api, monkeypatch, capsys):
    monkeypatch.delenv("GITHUB_TOKEN")
    code, out, err = run(capsys, "comment", FIRST, *PR, "--api-url", github_api.url)
    assert code == 4 and out == ""
    assert "GITHUB_TOKEN" in one_line_error(err) and github_api.requests == []


@pytest.mark.parametrize(
    "case, expected",
    [
        ("read-only token", "may not comment on acme/trainer#7 (403 Resource not accessible by integration)"),
        ("bad token", "GitHub refused the token in GITHUB_TOKEN (401 Bad credentials)"),
        ("unknown PR", "acme/trainer#8 not found (404)"),
        ("unknown repo", "acme/nope#7 not found (404)"),
        ("an issue", "acme/trainer#9 is an issue, not a pull request"),
    ],
)
def test_github_refusals_are_one_line_exit_4_and_post_nothing(github_api, monkeypatch, capsys, case, expected):
    repo, number = "acme/trainer", "7"
    if case == "read-only token":
        monkeypatch.setenv("GITHUB_TOKEN", READ_ONLY_TOKEN)
    elif case == "bad token":
        monkeypatch.setenv("GITHUB_TOKEN", "ghp_notAValidToken")
    elif case == "unknown PR":
        number = "8"
    elif case == "unknown repo":
        repo = "acme/nope"
    else:
        github_api.add_issue("acme", "trainer", 9)
        number = "9"
    code, out, err = run(capsys, "comment", FIRST, "--repo", repo, "--pr", number, "--api-url", github_api.url)
    assert code == 4 and out == ""
    assert expected in one_line_error(err)
    assert github_api.comments("acme", "trainer", 7) == []
    assert "ghp_notAValidToken" not in err


def test_an_api_that_stays_down_is_one_line_after_the_retries(github_api, no_waiting, capsys):
    github_api.fail(502, times=100)
    code, _, err = run(capsys, "comment", FIRST, *PR, "--api-url", github_api.url)
    *waits, last = err.strip().splitlines()
    assert code == 4
    assert last == (f"triage: error: the GitHub API at {github_api.url} kept failing (502 Server Error) after 5 tries")
    assert len(waits) == 4 and all("the GitHub API answered 502; retrying in" in w for w in waits)
    assert len(no_waiting.sleeps) == 4 and github_api.writes() == []


def test_an_unreachable_api_is_one_line(no_waiting, monkeypatch, capsys):
    monkeypatch.setenv("GITHUB_TOKEN", TOKEN)
    with GitHubAPI() as gone:
        url = gone.url  # a port that was just free
    code, _, err = run(capsys, "comment", FIRST, *PR, "--api-url", url)
    assert code == 4
    assert err.strip().splitlines()[-1] == (
        f"triage: error: cannot reach the GitHub API at {url} (connection refused) after 5 tries"
    )


def test_a_rate_limit_beyond_the_max_wait_fails_at_once(github_api, capsys):
    github_api.primary_rate_limit(reset=time.time() + 3 * 3600, times=10)
    started = time.monotonic()
    code, _, err = run(capsys, "comment", FIRST, *PR, "--api-url", github_api.url)
    assert code == 4 and time.monotonic() - started < 5
    line = one_line_error(err)
    assert re.search(
        r"GitHub's rate limit holds until \d\d:\d\d:\d\d UTC \(in 180 min\), longer than "
        r"the 15 min this command waits; nothing was written",
        line,
    )
    assert github_api.writes() == []


@pytest.mark.parametrize(
    "args, message",
    [
        (["--repo", "acme", "--pr", "7"], "argument --repo: expected a repository as OWNER/NAME, got 'acme'"),
        (["--repo", "acme/../x", "--pr", "7"], "expected a repository as OWNER/NAME"),
        (["--repo", "acme/trainer", "--pr", "0"], "argument --pr: a pull-request number is 1 or more, got 0"),
        (["--repo", "acme/trainer", "--pr", "-3"], "a pull-request number is 1 or more"),
        (
            ["--repo", "acme/trainer", "--pr", "7", "--api-url", "http://github.example.com"],
            "refusing to send the token to github.example.com over plain http: use https",
        ),
    ],
)
def test_bad_arguments_are_exit_2(github_api, capsys, args, message):
    with pytest.raises(SystemExit) as exit:
        cli.main(["comment", str(FIRST), *args])
    err = capsys.readouterr().err
    assert exit.value.code == 2 and message in err and len(err.strip().splitlines()) == 1
    assert github_api.requests == []


def test_a_missing_log_is_exit_2_before_any_request(github_api, tmp_path, capsys):
    code, _, err = run(capsys, "comment", tmp_path / "missing.log", *PR, "--api-url", github_api.url)
    assert code == 2 and "missing.log: no such file" in one_line_error(err)
    assert github_api.requests == []


# ---------------------------------------------------------------- bodies: size, fences, mentions


def test_a_huge_log_gives_a_body_that_fits_with_fences_closed_and_no_mentions(github_api, tmp_path, capsys):
    log = tmp_path / "huge.log"
    with log.open("w") as handle:
        for step in range(60_000):
            handle.write(f"step {step} loss {2 - step * 1e-6:.5f} cc @someone ``` #12\n")
        handle.write(
            "RuntimeError: mat1 and mat2 shapes cannot be multiplied (16x20 and 24x256) "
            "cc @someone\n```\n````` and @org/team\n"
        )
    assert run(capsys, "comment", log, *PR, "--api-url", github_api.url)[0] == 0
    (body,) = marked(github_api)
    assert len(body) <= GITHUB_LIMIT and fences_are_closed(body)
    assert "shape-mismatch" in body and "@someone" not in body and "@org" not in body
    assert "@\u200dsomeone" in body


def test_an_oversized_comment_is_cut_between_sections_with_a_note(github_api, tmp_path, capsys):
    # a cause table of our own with long texts, every cause supported by the log's error
    table = tmp_path / "causes.yaml"
    entries = []
    for n in range(60):
        text = " ".join(f"Paragraph {p} of cause {n}." * 20 for p in range(4))
        entries.append(
            f"  my-cause-{n:02d}:\n    title: Cause {n}\n    explanation: {text}\n"
            f"    fix: {text}\n    supports: {{shape-mismatch: 4.0}}\n"
        )
    table.write_text("version: 1\ncauses:\n" + "".join(entries))
    code, _, _ = run(capsys, "comment", SECOND, *PR, "--causes", table, "--api-url", github_api.url)
    assert code == 0
    (body,) = marked(github_api)
    assert len(body) <= GITHUB_LIMIT and fences_are_closed(body)
    note = body.strip().splitlines()[-1]
    assert note.startswith("_Cut to fit a GitHub comment: the last ") and "are left out, including “" in note
    assert "`triage explain` on the log shows all of it." in note
    tokens = MarkdownIt().parse(body)
    assert tokens[-1].type == "paragraph_close"  # the note is markdown, not inside a fence
    assert body.count("<details>") == body.count("</details>")


def test_a_body_cut_inside_log_text_closes_its_fence(github_api, policy):
    log_text = "".join(f"line {n}: ```` not a fence end @someone\n" for n in range(5_000))
    body = "<!-- t -->\n## log\n\n" + fence(log_text, "text") + "\n\n### After\n\nmore\n"
    assert len(body) > GITHUB_LIMIT
    posted = post(github_api, body, policy)
    (stored,) = github_api.comments("acme", "trainer", 7)
    assert stored == posted.body and len(stored) <= GITHUB_LIMIT and fences_are_closed(stored)
    assert "“After”" in stored.splitlines()[-1]  # the note names the sections it cut


# ---------------------------------------------------------------- the token stays secret


def test_the_token_appears_only_in_the_authorization_header(github_api, no_waiting, capsys, caplog):
    caplog.set_level(logging.DEBUG)  # github3.py's and urllib3's debug logs too
    seen = []

    def triage(*args: object) -> None:
        cli.main(["comment", *map(str, args), "--api-url", github_api.url])
        seen.append("".join(capsys.readouterr()))

    triage(FIRST, *PR)  # created
    triage(SECOND, *PR)  # updated
    triage(SECOND, *PR)  # unchanged
    triage(FIRST, *PR, "--dry-run")
    triage(FIRST, "--repo", "acme/trainer", "--pr", "8")  # 404
    github_api.fail(403, message=f"token {TOKEN} may not do this")  # a server that echoes it back
    triage(FIRST, *PR)
    assert "(403 token *** may not do this)" in seen[-1]
    github_api.fail(502, times=100)
    triage(FIRST, *PR)  # down
    assert "kept failing" in seen[-1]
    for text in seen + [caplog.text]:
        assert TOKEN not in text
    assert len(github_api.requests) > 10
    for request in github_api.requests:
        assert request.headers["Authorization"] == f"token {TOKEN}"
        rest = [v for k, v in request.headers.items() if k != "Authorization"]
        assert TOKEN not in request.path + repr(request.query) + request.body + "".join(rest)


def test_no_exception_repr_or_traceback_holds_the_token(github_api, policy):
    github_api.fail(403, message=f"echo {TOKEN}")
    with pytest.raises(github.GitHubError) as caught:
        post(github_api, "<!-- t -->\nhello", policy)
    seen = str(caught.value) + repr(caught.value) + "".join(traceback.format_exception(caught.value))
    assert TOKEN not in seen and "echo ***" in seen
    secret = github.Secret(TOKEN)
    client = github.connect(github_api.url, secret, policy)
    assert TOKEN not in repr(secret) + str(secret) + repr(client) + repr(client.session.auth)
    with pytest.raises(TypeError):
        import pickle

        pickle.dumps(secret)


def test_a_token_with_a_line_break_is_refused_without_echoing_it(github_api, monkeypatch, capsys):
    monkeypatch.setenv("GITHUB_TOKEN", "ghp_first\nsecondpart")
    code, _, err = run(capsys, "comment", FIRST, *PR, "--api-url", github_api.url)
    assert code == 4 and "GITHUB_TOKEN holds characters no GitHub token has" in one_line_error(err)
    assert "secondpart" not in err and github_api.requests == []


def test_candidates_named_on_the_answers_own_line_point_back_to_it():
    # an out-of-memory alone names its two other common causes under it, on the same line: the
    # comment quotes the line once and the candidates point back to cause 1 (a real run's log)
    report = explain(one_log("cuda-oom"))
    assert [c.id for c in report.causes] == ["cuda-oom", "loss-tensor-leak", "missing-no-grad-eval"]
    body = render.markdown(report)
    quoted = report.causes[0].evidence[0].text[:60]
    assert body.count(quoted) == 1
    assert body.count("*Evidence: the same lines as cause 1.*") == 2
    assert render.text(report).count("evidence: the same lines as cause 1") == 2
