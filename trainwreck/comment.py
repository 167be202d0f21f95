"""The sticky pull-request comment: one per PR and kind, found again by a hidden marker.

Each kind of body starts with its own hidden marker (`<!-- trainwreck:triage -->` for the
triage comment, `<!-- trainwreck:mutation-report -->` for the mutation report). `post` reads
the PR's comments (every page), edits the oldest one that starts with the marker when its body
differs, writes nothing when the body is the same, and creates the comment when there is none;
after creating it lists again and deletes any duplicate a concurrent run created: one comment
per PR and kind however often, and however concurrently, CI runs. The body is cut to GitHub's limit and checked
before the first request, so nothing is ever posted half-way.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace

import github3
from github3 import exceptions as gh

from trainwreck.errors import UsageError
from trainwreck.github import TOKEN_VARIABLE, GitHubError, Policy, Secret, connect, reporting
from trainwreck.markdown import GITHUB_LIMIT, fit

_OWNER = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9-]{0,38})")
_NAME = re.compile(r"[A-Za-z0-9._-]{1,100}")


@dataclass(frozen=True)
class Target:
    """A pull request: `owner/name#number`."""

    owner: str
    name: str
    number: int

    def __str__(self) -> str:
        return f"{self.owner}/{self.name}#{self.number}"

    @classmethod
    def parse(cls, text: str) -> Target:
        """`OWNER/NAME#N` (as `injector run --comment` takes it)."""
        repo, sep, number = text.strip().rpartition("#")
        if not sep:
            raise UsageError(f"expected OWNER/NAME#N (a pull request), got {text!r}")
        return cls(*parse_repo(repo), parse_number(number))


def parse_repo(text: str) -> tuple[str, str]:
    """`OWNER/NAME` as (owner, name); a UsageError for anything GitHub could not name."""
    owner, sep, name = text.strip().partition("/")
    if not sep or not _OWNER.fullmatch(owner) or not _NAME.fullmatch(name) or name in (".", ".."):
        raise UsageError(f"expected a repository as OWNER/NAME, got {text!r}")
    return owner, name.removesuffix(".git")


def parse_number(text: str) -> int:
    """A pull-request number: a whole number from 1."""
    try:
        number = int(str(text).strip())
    except ValueError:
        raise UsageError(f"not a pull-request number: {text!r}") from None
    if number < 1:
        raise UsageError(f"a pull-request number is 1 or more, got {number}")
    return number


@dataclass(frozen=True)
class Posted:
    """What `post` did (or, in a dry run, would do)."""

    action: str  # created, updated, unchanged; dry runs: would create, would update, would post
    target: Target
    comment_id: int | None = None
    url: str | None = None
    body: str = field(default="", repr=False)

    def describe(self) -> str:
        """One line for the terminal."""
        where = f": {self.url}" if self.url else ""
        if self.action == "unchanged":
            return f"the comment on {self.target} is already up to date{where}"
        if self.action == "would post":
            return (
                f"dry run: would post this body to {self.target} "
                f"({TOKEN_VARIABLE} is not set, so the PR's comments were not read)"
            )
        if self.action.startswith("would "):
            what = "the comment" if self.action == "would update" else "a comment"
            return f"dry run: {self.action} {what} on {self.target}{where}; nothing was written"
        return f"{self.action} the comment on {self.target}{where}"


def prepare(body: str, marker: str, *, hint: str | None = None) -> str:
    """The body as it will be posted: starting with `marker`, cut to GitHub's limit."""
    if not marker.startswith("<!--") or not body.startswith(marker):
        raise ValueError("a sticky comment body must start with its hidden marker")
    body = fit(body, GITHUB_LIMIT, hint=hint)
    if len(body) > GITHUB_LIMIT or not body.startswith(marker):
        raise ValueError("the body could not be fitted to a GitHub comment")
    return body


def _normal(text: str | None) -> str:
    # GitHub may hand a body back with CRLF line ends, or trimmed
    return (text or "").replace("\r\n", "\n").strip()


def _find(issue: github3.issues.Issue, marker: str) -> github3.issues.comment.IssueComment | None:
    """The oldest comment that starts with `marker` (listed oldest first, page after page)."""
    for comment in issue.comments():
        if _normal(comment.body).startswith(marker):
            return comment
    return None


def post(
    body: str,
    *,
    marker: str,
    target: Target,
    token: Secret | None,
    api: str,
    policy: Policy | None = None,
    dry_run: bool = False,
    hint: str | None = None,
) -> Posted:
    """Create or update the comment on `target` that starts with `marker`, so that it reads
    `body` (cut to fit, `hint` added to the cut note); write nothing when it already does.

    With `dry_run` nothing is written: with a token the PR's comments are read to say what
    would happen; without one, nothing is read either.
    """
    policy = policy if policy is not None else Policy()
    body = prepare(body, marker, hint=hint)
    if token is None:
        if dry_run:
            return Posted("would post", target, body=body)
        raise GitHubError(f"no GitHub token: set {TOKEN_VARIABLE} to a token that can write pull-request comments")
    client = connect(api, token, policy)
    with reporting(api=api, what=str(target), token=token, policy=policy):
        issue = client.issue(target.owner, target.name, target.number)
        if issue is None:
            raise GitHubError(f"{target} not found")
        if not issue.pull_request_urls:
            raise GitHubError(f"{target} is an issue, not a pull request")
        posted_once = False
        for attempt in range(1, policy.tries + 1):
            existing = _find(issue, marker)
            if existing is not None:
                found = Posted("unchanged", target, existing.id, existing.html_url, body)
                if _normal(existing.body) == _normal(body):
                    # after a POST whose reply was lost, the same body means it did go through
                    return replace(found, action="created") if posted_once else found
                if dry_run:
                    return replace(found, action="would update")
                if not existing.edit(body):
                    raise GitHubError(f"GitHub did not update the comment on {target}")
                return replace(found, action="updated")
            if dry_run:
                return Posted("would create", target, body=body)
            try:
                posted_once = True
                created = issue.create_comment(body)
            except (gh.ServerError, gh.ConnectionError):
                # The comment may exist though the reply was lost: look again before posting
                # again, so a flaky API never leaves two comments.
                if attempt == policy.tries:
                    raise
                policy.notify(f"posting the comment on {target} failed; looking again")
                policy.sleep(policy.backoff_delay(attempt))
                continue
            if created is None:
                raise GitHubError(f"GitHub did not create the comment on {target}")
            return _settle(issue, marker, created, body, target)
    raise AssertionError("unreachable: the last attempt returns or raises")


def _settle(
    issue: github3.issues.Issue, marker: str, created: github3.issues.comment.IssueComment, body: str, target: Target
) -> Posted:
    """After creating a comment: keep one. Runs started together (two CI jobs, a re-run) each
    find no comment and each create one; so every run lists again, keeps the oldest marked
    comment, deletes the other marked comments its own account wrote, and makes the kept one
    read `body`. However the runs interleave, one comment is left."""
    marked = sorted((c for c in issue.comments() if _normal(c.body).startswith(marker)), key=lambda c: c.id)
    keep = marked[0] if marked else created  # a listing may lag behind the create
    _delete_extras(marked, keep, created)
    if keep.id == created.id:
        return Posted("created", target, created.id, created.html_url, body)
    if _normal(keep.body) == _normal(body):
        return Posted("unchanged", target, keep.id, keep.html_url, body)
    if not keep.edit(body):
        raise GitHubError(f"GitHub did not update the comment on {target}")
    return Posted("updated", target, keep.id, keep.html_url, body)


def _delete_extras(
    marked: list[github3.issues.comment.IssueComment],
    keep: github3.issues.comment.IssueComment,
    created: github3.issues.comment.IssueComment,
) -> None:
    """Delete the marked comments other than `keep` that the account behind `created` wrote
    (a person's comment that happens to start with the marker is left alone). A comment a
    concurrent run deleted first answers 404: github3.py returns False, and that is fine."""
    author = _login(created)
    for extra in marked:
        if extra.id != keep.id and _login(extra) == author:
            extra.delete()


def _login(comment: github3.issues.comment.IssueComment) -> str | None:
    user = getattr(comment, "user", None)
    return getattr(user, "login", None)
