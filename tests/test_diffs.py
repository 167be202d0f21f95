"""One reader of unified diffs (trainwreck.diffs), on diffs git itself printed."""

from __future__ import annotations

import subprocess

import pytest

from trainwreck import diffs


def git(root, *args) -> str:
    return subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@t", *args],
        cwd=root,
        check=True,
        capture_output=True,
        text=True,
    ).stdout


@pytest.fixture
def repo(tmp_path):
    git(tmp_path, "init", "-q")
    (tmp_path / "train.py").write_text("".join(f"line {i}\n" for i in range(1, 21)))
    (tmp_path / "old.py").write_text("gone = 1\n")
    (tmp_path / "moved.py").write_text("".join(f"kept {i}\n" for i in range(1, 11)))
    (tmp_path / "tail.py").write_text("a = 1\nb = 2")  # no newline at the end
    git(tmp_path, "add", ".")
    git(tmp_path, "commit", "-qm", "start")
    text = (tmp_path / "train.py").read_text().splitlines(keepends=True)
    text[4] = "line 5 changed\n"  # a change
    del text[9]  # a removal (old line 10)
    text.insert(15, "inserted\n")  # an addition
    (tmp_path / "train.py").write_text("".join(text))
    (tmp_path / "old.py").unlink()
    git(tmp_path, "mv", "moved.py", "renamed.py")
    (tmp_path / "tail.py").write_text("a = 1\nb = 3")
    git(tmp_path, "add", "-A")
    return tmp_path


def test_changed_lines_of_a_real_git_diff(repo):
    changed = diffs.changed_lines(git(repo, "diff", "--cached", "--unified=0", "-M"))
    assert changed["train.py"] == {5, 9, 16}  # the change, where the removal was, the addition
    assert changed["tail.py"] == {2}
    assert "old.py" not in changed and "renamed.py" not in changed  # deleted; renamed unchanged


def test_hunks_keep_both_sides_and_a_missing_final_newline(repo):
    hunks = diffs.parse(git(repo, "diff", "--cached", "-M"))
    tail = next(h for h in hunks if h.path == "tail.py")
    assert tail.removed == ["b = 2"] and tail.added == ["b = 3"]
    assert [line.text for line in tail.lines if line.kind == diffs.ADDED] == ["b = 3"]  # no "\n"
    train = next(h for h in hunks if h.path == "train.py")
    assert "line 5" in train.old and "line 5 changed" in train.new
    deleted = next(h for h in hunks if h.path == "old.py")
    assert deleted.file_deleted and deleted.removed == ["gone = 1"]


def test_text_that_is_not_a_diff_is_one_error():
    with pytest.raises(diffs.DiffError, match="not a unified diff"):
        diffs.parse("--- a/x.py\n+++ b/x.py\n@@ -1,3 +1,3 @@\n-only one line\n")
    assert diffs.parse("just some text\n") == []
