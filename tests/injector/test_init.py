"""`injector init` as a user meets it: a fresh repository gets the workflows and the
`[tool.trainwreck]` section; a repository that has them keeps its own steps, comments and
formatting; re-running changes nothing; bad input changes nothing either."""

from __future__ import annotations

import hashlib
import io
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
import trainwreck_workflows
from ruamel.yaml import YAML

from injector import config, init
from injector.cli import main

WORKFLOWS = ("trainwreck-mutation.yml", "trainwreck-train.yml", "trainwreck-triage.yml")
PINNED_CHECKOUT = "actions/checkout@3d3c42e5aac5ba805825da76410c181273ba90b1 # v7.0.1"


def run(capsys, *args):
    code = main(["init", *map(str, args)])
    out, err = capsys.readouterr()
    return code, out, err


def digest(root: Path) -> dict[str, str]:
    return {
        p.relative_to(root).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


def actionlint(*paths: Path) -> str:
    """actionlint's complaints about `paths` (with shellcheck on the scripts); empty when clean."""
    binary = shutil.which("actionlint", path=str(Path(sys.executable).parent)) or shutil.which("actionlint")
    shellcheck = shutil.which("shellcheck", path=str(Path(sys.executable).parent)) or shutil.which("shellcheck")
    if binary is None or shellcheck is None:
        pytest.fail("actionlint and shellcheck come with the test extra: pip install -e '.[test]'")
    result = subprocess.run(
        [binary, "-no-color", f"-shellcheck={shellcheck}", *map(str, paths)], capture_output=True, text=True, timeout=60
    )
    return (result.stdout + result.stderr).strip() or ("" if result.returncode == 0 else f"exit {result.returncode}")


def load(path: Path) -> dict:
    return YAML(typ="safe").load(path.read_text(encoding="utf-8"))


# What the workflows install as trainwreck (tests/injector/test_package.py holds it to pip).
PACKAGE = "trainwreck @ git+https://github.com/acme/trainwreck@" + "0123456789" * 4


@pytest.fixture
def repo(tmp_path, monkeypatch) -> Path:
    monkeypatch.setenv("TRAINWRECK_PACKAGE", PACKAGE)
    root = tmp_path / "trainer"
    (root / ".git").mkdir(parents=True)  # a repository's top folder, as far as init can tell
    return root


def test_a_fresh_repository_gets_the_workflows_and_the_section(capsys, repo):
    code, out, err = run(capsys, repo)
    assert code == 0, err
    workflows = repo / ".github" / "workflows"
    for name in WORKFLOWS:
        shipped = trainwreck_workflows.templates()[name].replace(
            "trainwreck @ git+https://github.com/OWNER/trainwreck@COMMIT", PACKAGE
        )
        assert (workflows / name).read_text() == shipped
        assert f"created .github/workflows/{name}" in out
    assert "created pyproject.toml" in out
    assert "---" not in out  # new files are listed, not printed
    assert actionlint(*(workflows / name for name in WORKFLOWS)) == ""
    settings = config.load(repo)
    assert settings.source == repo / "pyproject.toml"
    assert settings.paths == () and settings.operators == () and settings.guard is None


def test_running_it_again_changes_nothing(capsys, repo):
    assert run(capsys, repo, "--shards", "3", "--runner-labels", "self-hosted,linux,a100")[0] == 0
    before = digest(repo)
    code, out, _ = run(capsys, repo)
    assert code == 0
    assert digest(repo) == before
    assert "---" not in out and "+++" not in out
    assert out.splitlines()[:4] == [f"unchanged .github/workflows/{name}" for name in WORKFLOWS] + [
        "unchanged pyproject.toml"
    ]


def test_shards_and_runner_labels_go_into_the_workflows_and_stay(capsys, repo):
    assert run(capsys, repo, "--shards", "6", "--runner-labels", "self-hosted, linux ,a100")[0] == 0
    workflows = repo / ".github" / "workflows"
    campaign = load(workflows / "trainwreck-mutation.yml")["jobs"]["campaign"]
    assert campaign["strategy"]["matrix"]["shard"] == [1, 2, 3, 4, 5, 6]
    labels = """'["self-hosted","linux","a100"]'"""
    assert labels in campaign["runs-on"]
    assert labels in load(workflows / "trainwreck-train.yml")["jobs"]["train"]["runs-on"]
    assert actionlint(workflows / "trainwreck-mutation.yml", workflows / "trainwreck-train.yml") == ""
    # A later `injector init` (an upgrade, say) keeps what the repository chose.
    assert run(capsys, repo, "--shards", "2")[0] == 0
    campaign = load(workflows / "trainwreck-mutation.yml")["jobs"]["campaign"]
    assert campaign["strategy"]["matrix"]["shard"] == [1, 2] and labels in campaign["runs-on"]


# An older trainwreck-train.yml a team has made its own: another indentation style, an old pin,
# a step and a job of its own, comments everywhere, a longer timeout, a step it deleted.
TEAM_TRAIN = """\
# Our smoke training. Owned by the infra team.
name: trainwreck-train

on:
  pull_request:
    branches: [main]   # only PRs to main

permissions:
  contents: read

jobs:
  train:
    name: Smoke training
    runs-on: ${{ fromJSON(vars.TRAINWRECK_RUNNER_LABELS || '["self-hosted","a100"]') }}
    timeout-minutes: 90  # the A100 queue is slow
    steps:
    - name: Check out the pull request
      uses: actions/checkout@11bd71901bbe5b1630ceea73d27597364c9af683 # v4.2.2
      with:
        fetch-depth: 2
        persist-credentials: false
    # Mount the dataset cache before anything else needs it.
    - name: Mount the dataset cache
      run: sudo mount /data   # needs the NFS share
    - name: Train under triage watch
      env:
        TRAIN_COMMAND: ${{ vars.TRAINWRECK_TRAIN_COMMAND || 'python train.py --smoke' }}
      run: triage watch --log run.log -- bash -c "$TRAIN_COMMAND"
  # Docs build, unrelated to trainwreck.
  docs:
    runs-on: ubuntu-latest
    steps:
    - run: echo docs
"""


def test_an_existing_workflow_keeps_the_teams_steps_comments_and_style(capsys, repo):
    path = repo / ".github" / "workflows" / "trainwreck-train.yml"
    path.parent.mkdir(parents=True)
    path.write_text(TEAM_TRAIN)
    code, out, err = run(capsys, repo)
    assert code == 0, err
    text = path.read_text()
    assert (
        "--- a/.github/workflows/trainwreck-train.yml" in out
        and "updated .github/workflows/trainwreck-train.yml" in out
    )
    assert "-      uses: actions/checkout@11bd71901bbe5b1630ceea73d27597364c9af683 # v4.2.2" in out
    assert f"+      uses: {PINNED_CHECKOUT}" in out
    # Everything of the team's is still there, in its place and its indentation.
    for line in (
        "# Our smoke training. Owned by the infra team.",
        "    branches: [main]   # only PRs to main",
        "    timeout-minutes: 90  # the A100 queue is slow",
        "    # Mount the dataset cache before anything else needs it.\n"
        "    - name: Mount the dataset cache\n"
        "      run: sudo mount /data   # needs the NFS share\n",
        "  # Docs build, unrelated to trainwreck.\n  docs:\n",
        "    - run: echo docs\n",
        """'["self-hosted","a100"]'""",
    ):
        assert line in text
    job = load(path)["jobs"]["train"]
    assert [step.get("name") for step in job["steps"]] == [
        "Check out the pull request",
        "Record the PR's number and diff",
        "Install trainwreck and the project",
        "Mount the dataset cache",
        "Train under triage watch",
        "Upload the log and telemetry",
    ]
    template = load(Path(trainwreck_workflows.__file__).parent / "trainwreck-train.yml")["jobs"]["train"]
    assert job["steps"][4] == template["steps"][3]  # trainwreck's own command is current again
    assert job["permissions"] == {"contents": "read"}
    assert actionlint(path) == ""
    before = path.read_bytes()
    code, out, _ = run(capsys, repo)
    assert code == 0 and path.read_bytes() == before and "unchanged .github/workflows/trainwreck-train.yml" in out


def test_a_renamed_trainwreck_step_is_updated_not_duplicated(capsys, repo):
    path = repo / ".github" / "workflows" / "trainwreck-train.yml"
    path.parent.mkdir(parents=True)
    path.write_text(TEAM_TRAIN.replace("name: Check out the pull request", "name: Get the code"))
    assert run(capsys, repo)[0] == 0
    steps = load(path)["jobs"]["train"]["steps"]
    checkouts = [s for s in steps if s.get("uses", "").startswith("actions/checkout@")]
    assert len(checkouts) == 1 and checkouts[0]["name"] == "Check out the pull request"


def test_a_deleted_step_comes_back_in_place_with_its_comments(capsys, repo):
    assert run(capsys, repo)[0] == 0
    path = repo / ".github" / "workflows" / "trainwreck-train.yml"
    fresh = path.read_text()
    start = fresh.index("      - name: Record the PR's number and diff\n")
    end = fresh.index("      - name: Install trainwreck and the project\n")
    edited = fresh[:start] + "      # our note about the install step\n" + fresh[end:]
    on = "on:\n  pull_request:\n  push:\n    branches: [main, master]\n"
    assert on in edited
    edited = edited.replace(on, "on: [pull_request, workflow_dispatch]  # ours\n")
    path.write_text(edited)
    code, out, _ = run(capsys, repo)
    assert code == 0
    text = path.read_text()
    assert "+      - name: Record the PR's number and diff" in out
    assert (
        "        # Before any of the PR's code runs: git only reads the checkout. (A push records neither.)\n" in text
    )
    assert "      # our note about the install step\n      - name: Install trainwreck and the project\n" in text
    # the short form lacks the push that runs the baselines: it becomes a mapping with it added,
    # the user's own event kept
    assert load(path)["on"] == {
        "pull_request": None,
        "workflow_dispatch": None,
        "push": {"branches": ["main", "master"]},
    }
    head, rest = text.split("\non:", 1)
    assert head == fresh.split("\non:", 1)[0]
    assert (
        rest.split("\npermissions:", 1)[1].replace("      # our note about the install step\n", "")
        == fresh.split("\npermissions:", 1)[1]
    )


def test_a_yaml_extension_and_windows_line_endings_are_kept(capsys, repo):
    path = repo / ".github" / "workflows" / "trainwreck-train.yaml"
    path.parent.mkdir(parents=True)
    path.write_bytes(TEAM_TRAIN.replace("\n", "\r\n").encode())
    assert run(capsys, repo)[0] == 0
    assert not (path.parent / "trainwreck-train.yml").exists()
    data = path.read_bytes()
    assert PINNED_CHECKOUT.encode() in data
    assert data.count(b"\r\n") == data.count(b"\n")


PYPROJECT = """\
# The trainer's packaging. Keep the comments!
[project]
name = "trainer"   # the name on the index
version = "1.2.3"
dependencies = [
    "torch>=2.1",  # any torch
]

[tool.black]
line-length = 100

[tool.ruff.lint]
select = ["E", "F"]    # odd   spacing kept
"""


def test_an_existing_pyproject_keeps_every_byte_and_gains_the_section(capsys, repo):
    (repo / "pyproject.toml").write_text(PYPROJECT)
    code, out, _ = run(capsys, repo)
    assert code == 0
    text = (repo / "pyproject.toml").read_text()
    assert text == PYPROJECT + "\n" + init.SECTION
    assert "updated pyproject.toml" in out and "+[tool.trainwreck]" in out
    data = tomllib.loads(text)
    assert data["tool"]["black"] == {"line-length": 100} and data["project"]["name"] == "trainer"
    assert config.load(repo).paths == ()
    # A project that has the section already is left alone, byte for byte.
    mine = PYPROJECT + '\n[tool.trainwreck]\nguard = "python train.py --smoke"  # ours\n'
    (repo / "pyproject.toml").write_text(mine)
    assert run(capsys, repo)[0] == 0
    assert (repo / "pyproject.toml").read_text() == mine


def test_dry_run_shows_everything_and_writes_nothing(capsys, repo):
    (repo / "pyproject.toml").write_text(PYPROJECT)
    before = digest(repo)
    code, out, _ = run(capsys, repo, "--dry-run", "--shards", "2")
    assert code == 0
    assert digest(repo) == before
    assert "+++ b/.github/workflows/trainwreck-mutation.yml" in out and "+        shard: [1, 2]" in out
    assert "+[tool.trainwreck]" in out
    assert "would create .github/workflows/trainwreck-train.yml" in out
    assert "would update pyproject.toml" in out
    assert out.rstrip().endswith("dry run: nothing written") or "dry run: nothing written" in out


@pytest.mark.parametrize(
    "setup, message",
    [
        (lambda root: (root / "pyproject.toml").write_text("[project\nname = 1\n"), "pyproject.toml: not valid TOML"),
        (
            lambda root: (root / "pyproject.toml").write_text("tool = {black = {line-length = 88}}\n"),
            "pyproject.toml: cannot add a [tool.trainwreck] section",
        ),
        (
            lambda root: _workflow(root, "trainwreck-triage.yml", "jobs:\n  triage: [unclosed\n"),
            ".github/workflows/trainwreck-triage.yml: not valid YAML",
        ),
        (
            lambda root: _workflow(root, "trainwreck-mutation.yml", "- just\n- a list\n"),
            ".github/workflows/trainwreck-mutation.yml: not a workflow",
        ),
        (
            lambda root: _workflow(root, "trainwreck-train.yml", "on: pull_request\njobs: [train]\n"),
            "`jobs` should be a mapping",
        ),
        (
            lambda root: _workflow(root, "trainwreck-train.yml", b"name: \xff\n"),
            ".github/workflows/trainwreck-train.yml: not UTF-8 text",
        ),
        (lambda root: (root / ".github").write_text("not a folder\n"), ".github: not a folder"),
    ],
    ids=["toml", "inline-tool", "yaml", "not-a-mapping", "jobs-list", "binary", "github-file"],
)
def test_bad_files_stop_init_before_anything_is_written(capsys, repo, setup, message):
    setup(repo)
    before = digest(repo)
    code, out, err = run(capsys, repo)
    assert code == 2
    assert err.startswith("injector: error: ") and message in err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err
    assert digest(repo) == before  # the valid files were not written either


def _workflow(root: Path, name: str, text: str | bytes) -> None:
    path = root / ".github" / "workflows" / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(text if isinstance(text, bytes) else text.encode())


@pytest.mark.parametrize(
    "args, message",
    [
        (["missing-folder"], "not a folder"),
        (["pyproject.toml"], "not a folder"),
        ([".", "--runner-labels", " , "], "--runner-labels needs at least one label"),
        ([".", "--runner-labels", "gpu,it's"], "not a runner label"),
        ([".", "--shards", "300"], "--shards must be 1..256"),
    ],
)
def test_bad_arguments_are_one_line_and_exit_2(capsys, repo, monkeypatch, args, message):
    (repo / "pyproject.toml").write_text(PYPROJECT)
    monkeypatch.chdir(repo)
    before = digest(repo)
    code, _, err = run(capsys, *args)
    assert code == 2 and message in err and len(err.strip().splitlines()) == 1
    assert digest(repo) == before


def test_argparse_rejects_a_zero_shard_count(capsys, repo):
    with pytest.raises(SystemExit) as exit_info:
        main(["init", str(repo), "--shards", "0"])
    assert exit_info.value.code == 2 and "must be at least 1" in capsys.readouterr().err


def test_a_subfolder_of_a_repository_gets_a_note(capsys, repo):
    (repo / "training").mkdir()
    code, out, _ = run(capsys, repo / "training")
    assert code == 0
    assert f"note: GitHub reads workflows only from the repository's top folder, {repo.resolve()}" in out


@pytest.mark.parametrize("name", WORKFLOWS)
def test_the_shipped_workflows_survive_a_round_trip_byte_for_byte(name):
    """What `injector init` writes for a fresh repository with options is ruamel's own rendering
    of the workflow, and an edit reformats nothing: so each file must be in ruamel's style."""
    text = trainwreck_workflows.templates()[name]
    yaml = init._yaml()
    out = io.StringIO()
    yaml.dump(yaml.load(text), out)
    assert out.getvalue() == text
