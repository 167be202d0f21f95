"""The GitHub Actions workflows users adopt (`workflows/`) and this project's own CI
(`.github/workflows/`): clean under actionlint (with shellcheck on every `run:` script) and zizmor
(offline), and keeping the promises of their design: pinned actions, a read-only job for PR code,
a triage job that never runs it, a sharded campaign, and comments skipped with a notice when the
token cannot write. The shell steps that guard the comments are run here for real."""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
import trainwreck_workflows
from ruamel.yaml import YAML

from injector import cli as injector_cli
from injector.outcomes import Baseline, Outcome, Report
from triage import cli as triage_cli

ROOT = Path(__file__).resolve().parents[1]
USER_WORKFLOWS = sorted((ROOT / "workflows").glob("*.yml"))
OWN_WORKFLOWS = sorted((ROOT / ".github" / "workflows").glob("*.yml"))
ALL_WORKFLOWS = USER_WORKFLOWS + OWN_WORKFLOWS
SHA_PIN = re.compile(r"[\w.-]+/[\w./-]+@[0-9a-f]{40}")


def ids(paths: list[Path]) -> list[str]:
    return [path.relative_to(ROOT).as_posix() for path in paths]


def tool(name: str) -> str:
    """A linter from the test extra: next to this Python first (the virtualenv), else on PATH."""
    found = shutil.which(name, path=str(Path(sys.executable).parent)) or shutil.which(name)
    if found is None:
        pytest.fail(f"{name} is not installed: pip install -e '.[test]'")
    return found


def lint_env() -> dict[str, str]:
    # Offline and anonymous: no token may reach the linters (zizmor would go online with one).
    return {
        key: value
        for key, value in os.environ.items()
        if key not in {"GH_TOKEN", "GITHUB_TOKEN", "ZIZMOR_GITHUB_TOKEN", "GH_HOST"}
    }


def load(path: Path) -> dict:
    return YAML(typ="safe").load(path.read_text(encoding="utf-8"))


def workflow(name: str) -> dict:
    return load(ROOT / "workflows" / name)


def step(job: dict, name: str) -> dict:
    matches = [s for s in job["steps"] if s.get("name") == name]
    assert len(matches) == 1, f"no single step named {name!r}"
    return matches[0]


def all_steps(document: dict) -> list[dict]:
    return [s for job in document["jobs"].values() for s in job.get("steps", [])]


def command(script: str, **values: str) -> list[str]:
    """A one-command script as argv, its `"$VAR"`s replaced by `values`."""
    words = shlex.split(script.replace("\\\n", " "))
    return [re.sub(r"\$(\w+)", lambda m: values.get(m.group(1), m.group(0)), word) for word in words]


# -- linters ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("path", ALL_WORKFLOWS, ids=ids(ALL_WORKFLOWS))
def test_actionlint_with_shellcheck_reports_nothing(path):
    result = subprocess.run(
        [tool("actionlint"), "-no-color", f"-shellcheck={tool('shellcheck')}", str(path)],
        capture_output=True,
        text=True,
        env=lint_env(),
        timeout=60,
    )
    output = result.stdout + result.stderr
    assert result.returncode == 0 and not output.strip(), output


@pytest.mark.parametrize("path", ALL_WORKFLOWS, ids=ids(ALL_WORKFLOWS))
def test_zizmor_offline_reports_nothing(path):
    # The workflows users adopt are held to zizmor's strictest persona.
    persona = "pedantic" if path in USER_WORKFLOWS else "regular"
    result = subprocess.run(
        [
            tool("zizmor"),
            "--offline",
            "--no-config",
            "--no-progress",
            "--format",
            "json",
            "--persona",
            persona,
            str(path),
        ],
        capture_output=True,
        text=True,
        env=lint_env(),
        timeout=60,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert json.loads(result.stdout) == [], result.stdout


# -- structure ------------------------------------------------------------------------------------


@pytest.mark.parametrize("path", ALL_WORKFLOWS, ids=ids(ALL_WORKFLOWS))
def test_every_action_is_pinned_to_a_commit_with_its_version(path):
    lines = [line for line in path.read_text(encoding="utf-8").splitlines() if re.match(r"\s*(- )?uses:", line)]
    assert lines
    for line in lines:
        reference = line.split("uses:", 1)[1].split("#", 1)[0].strip()
        assert SHA_PIN.fullmatch(reference), line
        assert re.search(r"# v\d+\.\d+\.\d+$", line), f"no version comment: {line}"


@pytest.mark.parametrize("path", ALL_WORKFLOWS, ids=ids(ALL_WORKFLOWS))
def test_no_expression_is_interpolated_into_a_script(path):
    """Untrusted text (PR titles, branch names, artifact contents) reaches scripts only through
    environment variables: no `run:` holds a `${{ }}` expression at all."""
    for s in all_steps(load(path)):
        assert "${{" not in s.get("run", ""), s.get("name")


@pytest.mark.parametrize("path", ALL_WORKFLOWS, ids=ids(ALL_WORKFLOWS))
def test_checkouts_never_keep_the_token(path):
    for s in all_steps(load(path)):
        if s.get("uses", "").startswith("actions/checkout@"):
            assert s["with"]["persist-credentials"] is False


def test_the_workflows_ship_in_the_package():
    assert trainwreck_workflows.templates() == {path.name: path.read_text(encoding="utf-8") for path in USER_WORKFLOWS}
    assert [path.name for path in USER_WORKFLOWS] == [
        "trainwreck-mutation.yml",
        "trainwreck-train.yml",
        "trainwreck-triage.yml",
    ]


@pytest.mark.parametrize("path", USER_WORKFLOWS, ids=ids(USER_WORKFLOWS))
def test_the_package_default_is_the_pinned_source_init_fills_in(path):
    # `injector init` replaces OWNER/COMMIT with the adopter's pinned source (test_package.py)
    assert load(path)["env"]["TRAINWRECK_PACKAGE"] == (
        "${{ vars.TRAINWRECK_PACKAGE || 'trainwreck @ git+https://github.com/OWNER/trainwreck@COMMIT' }}"
    )


def test_the_training_job_runs_pr_code_with_a_read_only_token_and_no_secrets():
    train = workflow("trainwreck-train.yml")
    text = (ROOT / "workflows" / "trainwreck-train.yml").read_text(encoding="utf-8")
    # never pull_request_target; pushes run the default branch's training, the baselines
    assert train["on"] == {"pull_request": None, "push": {"branches": ["main", "master"]}}
    assert train["permissions"] == {"contents": "read"}
    job = train["jobs"]["train"]
    assert job["if"] == (
        "github.event_name == 'pull_request' || github.ref_name == github.event.repository.default_branch"
    )
    assert job["permissions"] == {"contents": "read"}
    assert not re.search(r"\$\{\{[^}]*\b(secrets|github\.token)\b", text)
    watched = step(job, "Train under triage watch")["run"]
    assert "triage watch --log" in watched and "--telemetry" in watched
    assert '-- bash -c "$TRAIN_COMMAND"' in watched
    argv = command(watched, RUNNER_TEMP="/tmp/r", TRAIN_COMMAND="python train.py --smoke")
    parsed = triage_cli.build_parser().parse_args(argv[1:])  # the real CLI takes it
    assert parsed.command == "watch" and argv[-3:] == ["bash", "-c", "python train.py --smoke"]
    assert step(job, "Train under triage watch")["env"]["TRAIN_COMMAND"] == (
        "${{ vars.TRAINWRECK_TRAIN_COMMAND || 'python train.py --smoke' }}"
    )
    upload = step(job, "Upload the log and telemetry")
    assert upload["if"] == "always()" and upload["with"]["name"] == "trainwreck-triage"
    # The PR's number and diff are recorded before any of its code runs.
    names = [s["name"] for s in job["steps"]]
    assert names.index("Record the PR's number and diff") < names.index("Install trainwreck and the project")


def test_the_triage_job_never_checks_out_or_runs_pr_code():
    triage = workflow("trainwreck-triage.yml")
    assert triage["on"] == {"workflow_run": {"workflows": ["trainwreck-train"], "types": ["completed"]}}
    assert triage["permissions"] == {}
    job = triage["jobs"]["triage"]
    assert "github.event.workflow_run.conclusion == 'failure'" in job["if"]
    assert job["permissions"] == {"actions": "read", "contents": "read", "pull-requests": "write"}
    for s in job["steps"]:
        if s.get("uses", "").startswith("actions/checkout@"):
            # the one checkout: the default branch (no ref: on workflow_run that is its latest
            # commit, never the PR's) and of it only the cause table, kept out of the artifact
            assert s["with"] == {
                "path": "trainwreck-base",
                "sparse-checkout": "trainwreck-causes.yaml",
                "sparse-checkout-cone-mode": False,
                "persist-credentials": False,
            }
        script = s.get("run", "")
        assert not re.search(r"\bgit\b|pip install -e|requirements\.txt|bash -c|\bsource\b|(^|\s)\./", script), s[
            "name"
        ]
    download = step(job, "Download the training's log and telemetry")
    assert download["with"]["run-id"] == "${{ github.event.workflow_run.id }}"
    assert "triage comment run.log" in step(job, "Post or update the triage comment")["run"]


def test_the_mutation_workflow_shards_the_campaign_and_merges_the_reports():
    mutation = workflow("trainwreck-mutation.yml")
    assert mutation["permissions"] == {"contents": "read"}
    campaign, report = mutation["jobs"]["campaign"], mutation["jobs"]["report"]
    assert campaign["runs-on"] == ("""${{ fromJSON(vars.TRAINWRECK_RUNNER_LABELS || '["self-hosted","gpu"]') }}""")
    assert campaign["strategy"]["matrix"]["shard"] == [1, 2, 3, 4]
    shard = step(campaign, "Run this shard of the campaign")
    assert shard["env"]["SHARD"] == "${{ matrix.shard }}/${{ strategy.job-total }}"
    # `.`: the repository itself (with no PROJECT, injector runs its bundled demo)
    assert shard["run"].startswith('injector run . --shard "$SHARD" --since ')
    assert '--json "$REPORT"' in shard["run"]
    argv = command(shard["run"], SHARD="2/4", REPORT="shard-2.json")
    parsed = injector_cli._parser().parse_args(argv[1:])  # the real CLI takes it
    assert parsed.project == Path(".") and parsed.shard == (2, 4) and parsed.json == Path("shard-2.json")
    assert "permissions" not in campaign  # the GPU job runs PR code: the read-only default
    assert report["needs"] == "campaign" and report["runs-on"] == "ubuntu-latest"
    assert report["permissions"] == {"pull-requests": "write"}
    assert not any(s.get("uses", "").startswith("actions/checkout@") for s in report["steps"])
    merged = step(report, MERGE_STEP)["run"]
    assert "injector merge shards/*.json " in merged
    assert all(
        f"--{kind} report.{kind if kind != 'markdown' else 'md'}" in merged for kind in ("markdown", "html", "json")
    )
    assert step(report, "Upload the mutation report")["with"]["name"] == "trainwreck-report"


def test_the_torch_free_install_lists_every_dependency_but_torch():
    script = step(workflow("trainwreck-triage.yml")["jobs"]["triage"], "Install trainwreck (without torch)")["run"]
    code = re.search(r"python -c '([^']+)'", script).group(1)
    listed = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    names = {re.split(r"[ ;<>=!~\[]", line, maxsplit=1)[0].lower() for line in listed.splitlines()}
    assert "torch" not in names
    assert {"github3.py", "jinja2", "rich", "ruamel.yaml"} <= names
    assert not any("extra ==" in line for line in listed.splitlines())


# -- the guarding scripts, run -------------------------------------------------------------------


def run_script(script: str, tmp_path: Path, cwd: Path, env: dict[str, str]) -> tuple[subprocess.CompletedProcess, list]:
    """Run a step's script as GitHub does (bash -eo pipefail), with `triage` and `injector` faked
    by a recorder, and return the result and the commands the script ran."""
    fakes = tmp_path / "fakes"
    fakes.mkdir(exist_ok=True)
    calls = tmp_path / "calls.jsonl"
    for name in ("triage", "injector"):
        fake = fakes / name
        fake.write_text(
            f"#!{sys.executable}\nimport json, os, sys\n"
            f"open({str(calls)!r}, 'a').write(json.dumps([{name!r}, *sys.argv[1:]]) + '\\n')\n"
            "sys.exit(int(os.environ.get('FAKE_EXIT', '0')))\n"
        )
        fake.chmod(0o755)
    (tmp_path / "step.sh").write_text(script)
    full_env = {
        "PATH": f"{fakes}{os.pathsep}{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
        "HOME": str(tmp_path),
        "GITHUB_REPOSITORY": "team/trainer",
        **env,
    }
    result = subprocess.run(
        ["bash", "--noprofile", "--norc", "-eo", "pipefail", str(tmp_path / "step.sh")],
        cwd=cwd,
        env=full_env,
        capture_output=True,
        text=True,
        timeout=30,
    )
    recorded = [json.loads(line) for line in calls.read_text().splitlines()] if calls.exists() else []
    return result, recorded


class PullRequests(BaseHTTPRequestHandler):
    """GET /repos/team/trainer/pulls/N on 127.0.0.1: PR 7 has head `aaaa...`; no other PR exists.
    The training workflow's runs: `RUNS[branch]` (the default branch's healthy pushes)."""

    RUNS: dict[str, list] = {}

    def do_GET(self):
        runs = "/repos/team/trainer/actions/workflows/trainwreck-train.yml/runs?"
        if self.path == "/repos/team/trainer/pulls/7" and self.headers["Authorization"] == "Bearer t0ken":
            body, status = json.dumps({"number": 7, "head": {"sha": "a" * 40}}).encode(), 200
        elif self.path.startswith(runs) and self.headers["Authorization"] == "Bearer t0ken":
            query = dict(q.split("=", 1) for q in self.path[len(runs) :].split("&"))
            assert query["event"] == "push" and query["status"] == "success"
            found = self.RUNS.get(query["branch"], [])
            body, status = json.dumps({"total_count": len(found), "workflow_runs": found}).encode(), 200
        else:
            body, status = b'{"message": "Not Found"}', 404
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


@pytest.fixture
def api():
    server = ThreadingHTTPServer(("127.0.0.1", 0), PullRequests)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


TRIAGE_STEP = "Post or update the triage comment"


@pytest.mark.parametrize(
    "number, head, posts, notice",
    [
        ("7\n", "a" * 40, True, None),
        ("7; rm -rf ~\n", "a" * 40, False, "names no valid PR number"),
        ("$(touch pwned)", "a" * 40, False, "names no valid PR number"),
        ("-3", "a" * 40, False, "names no valid PR number"),
        ("", "a" * 40, False, "names no valid PR number"),
        ("8", "a" * 40, False, "does not exist or its head is not"),  # another PR
        ("7", "b" * 40, False, "does not exist or its head is not"),  # the PR moved on
    ],
    ids=["valid", "injection", "substitution", "negative", "empty", "other-pr", "stale"],
)
def test_the_triage_step_trusts_the_artifact_only_for_the_pr_it_ran_for(tmp_path, api, number, head, posts, notice):
    if shutil.which("curl") is None:
        pytest.skip("curl is not installed")
    script = step(workflow("trainwreck-triage.yml")["jobs"]["triage"], TRIAGE_STEP)["run"]
    artifact = tmp_path / "artifact"
    artifact.mkdir()
    (artifact / "pr-number").write_text(number)
    (artifact / "run.log").write_text("step 1 loss nan\n")
    (artifact / "telemetry.jsonl").write_text('{"t": 1, "gpu_util": 0, "mem_used": 1}\n')
    result, calls = run_script(
        script, tmp_path, artifact, {"GITHUB_TOKEN": "t0ken", "GITHUB_API_URL": api, "RUN_HEAD_SHA": head}
    )
    assert result.returncode == 0, result.stderr
    assert not (artifact / "pwned").exists()
    if posts:
        assert calls == [
            ["triage", "comment", "run.log", "--repo", "team/trainer", "--pr", "7", "--telemetry", "telemetry.jsonl"]
        ]
        assert triage_cli.build_parser().parse_args(calls[0][1:]).pr == 7  # the real CLI takes it
    else:
        assert calls == []
        assert "::notice title=trainwreck::" in result.stdout and notice in result.stdout
    assert "t0ken" not in result.stdout + result.stderr


@pytest.mark.parametrize("base_table", [True, False], ids=["base-table", "no-base-table"])
def test_the_cause_table_comes_from_the_default_branch_never_from_the_artifact(tmp_path, api, base_table):
    if shutil.which("curl") is None:
        pytest.skip("curl is not installed")
    script = step(workflow("trainwreck-triage.yml")["jobs"]["triage"], TRIAGE_STEP)["run"]
    workspace, artifact = tmp_path / "workspace", tmp_path / "artifact"
    (workspace / "trainwreck-base").mkdir(parents=True)
    artifact.mkdir()
    (artifact / "pr-number").write_text("7")
    (artifact / "run.log").write_text("step 1 loss nan\n")
    # what the PR's code could leave in its artifact: never passed on
    (artifact / "trainwreck-causes.yaml").write_text("causes: {}\n")
    base = workspace / "trainwreck-base" / "trainwreck-causes.yaml"
    if base_table:
        base.write_text("causes: {}\n")
    result, calls = run_script(
        script,
        tmp_path,
        artifact,
        {"GITHUB_TOKEN": "t0ken", "GITHUB_API_URL": api, "RUN_HEAD_SHA": "a" * 40, "GITHUB_WORKSPACE": str(workspace)},
    )
    assert result.returncode == 0, result.stderr
    assert calls == [
        [
            "triage",
            "comment",
            "run.log",
            "--repo",
            "team/trainer",
            "--pr",
            "7",
            *(["--causes", str(base)] if base_table else []),
        ]
    ]


BASELINE_STEP = "Find the default branch's last healthy training"


@pytest.mark.parametrize(
    "runs, run_id",
    [([{"id": 123}], "123"), ([], None), ([{"id": "1; touch pwned"}], None), ([{}], None)],
    ids=["found", "none-yet", "injection", "no-id"],
)
def test_the_baseline_is_the_default_branchs_last_healthy_training(tmp_path, api, runs, run_id):
    if shutil.which("curl") is None:
        pytest.skip("curl is not installed")
    PullRequests.RUNS = {"main": runs}
    job = workflow("trainwreck-triage.yml")["jobs"]["triage"]
    output = tmp_path / "github-output"
    output.write_text("")
    result, _ = run_script(
        step(job, BASELINE_STEP)["run"],
        tmp_path,
        tmp_path,
        {"GITHUB_TOKEN": "t0ken", "GITHUB_API_URL": api, "DEFAULT_BRANCH": "main", "GITHUB_OUTPUT": str(output)},
    )
    assert result.returncode == 0, result.stderr
    assert output.read_text() == (f"run-id={run_id}\n" if run_id else "")
    assert not (tmp_path / "pwned").exists() and "t0ken" not in result.stdout + result.stderr
    download = step(job, "Download its log (the baseline)")
    assert download["if"] == "steps.baseline.outputs.run-id != ''" and download["continue-on-error"] is True
    assert download["with"]["run-id"] == "${{ steps.baseline.outputs.run-id }}"


def test_the_comment_reads_the_run_beside_its_baseline_when_there_is_one(tmp_path, api):
    if shutil.which("curl") is None:
        pytest.skip("curl is not installed")
    script = step(workflow("trainwreck-triage.yml")["jobs"]["triage"], TRIAGE_STEP)["run"]
    runner_temp, artifact = tmp_path / "runner-temp", tmp_path / "artifact"
    (runner_temp / "trainwreck-baseline").mkdir(parents=True)
    (runner_temp / "trainwreck-baseline" / "run.log").write_text("step 1 loss 2.3\n")
    artifact.mkdir()
    (artifact / "pr-number").write_text("7")
    (artifact / "run.log").write_text("step 1 loss nan\n")
    result, calls = run_script(
        script,
        tmp_path,
        artifact,
        {"GITHUB_TOKEN": "t0ken", "GITHUB_API_URL": api, "RUN_HEAD_SHA": "a" * 40, "RUNNER_TEMP": str(runner_temp)},
    )
    assert result.returncode == 0, result.stderr
    baseline = str(runner_temp / "trainwreck-baseline" / "run.log")
    assert calls == [["triage", "comment", "run.log", "--repo", "team/trainer", "--pr", "7", "--baseline", baseline]]
    assert triage_cli.build_parser().parse_args(calls[0][1:]).baseline == baseline  # the real CLI takes it


def test_the_triage_step_skips_a_run_that_left_no_log(tmp_path, api):
    if shutil.which("curl") is None:
        pytest.skip("curl is not installed")
    script = step(workflow("trainwreck-triage.yml")["jobs"]["triage"], TRIAGE_STEP)["run"]
    (tmp_path / "artifact").mkdir()
    (tmp_path / "artifact" / "pr-number").write_text("7")
    result, calls = run_script(
        script,
        tmp_path,
        tmp_path / "artifact",
        {"GITHUB_TOKEN": "t0ken", "GITHUB_API_URL": api, "RUN_HEAD_SHA": "a" * 40},
    )
    assert result.returncode == 0 and calls == []
    assert "left no log" in result.stdout


MERGE_STEP = "Merge the shard reports and update the PR comment"
MERGE = [
    "injector",
    "merge",
    "shards/*.json",
    "--markdown",
    "report.md",
    "--html",
    "report.html",
    "--json",
    "report.json",
]


@pytest.mark.parametrize(
    "head_repo, actor, comments",
    [
        ("team/trainer", "alice", True),
        ("mallory/trainer", "mallory", False),  # a fork: read-only token
        ("", "alice", False),  # the fork was deleted
        ("team/trainer", "dependabot[bot]", False),
    ],
)
def test_the_mutation_comment_is_skipped_with_a_notice_when_the_token_is_read_only(
    tmp_path, head_repo, actor, comments
):
    script = step(workflow("trainwreck-mutation.yml")["jobs"]["report"], MERGE_STEP)["run"]
    result, calls = run_script(
        script, tmp_path, tmp_path, {"HEAD_REPO": head_repo, "GITHUB_ACTOR": actor, "PR": "12", "GITHUB_TOKEN": "t0ken"}
    )
    assert result.returncode == 0, result.stderr
    if comments:
        assert calls == [MERGE + ["--comment", "team/trainer#12"]]
        assert "::notice" not in result.stdout
        assert injector_cli._parser().parse_args(calls[0][1:]).comment  # the real CLI takes it
    else:
        assert calls == [MERGE]  # the report is still merged, into the job summary
        assert "::notice title=trainwreck::PR comment skipped" in result.stdout


@pytest.mark.parametrize(
    "exit_code, job_exit, annotation",
    [
        (4, 0, "::warning title=trainwreck::The PR comment could not be updated"),  # GitHub failed
        (2, 2, None),  # bad shard reports fail the job
    ],
)
def test_a_failed_comment_warns_but_a_failed_merge_fails(tmp_path, exit_code, job_exit, annotation):
    script = step(workflow("trainwreck-mutation.yml")["jobs"]["report"], MERGE_STEP)["run"]
    result, calls = run_script(
        script,
        tmp_path,
        tmp_path,
        {"HEAD_REPO": "team/trainer", "GITHUB_ACTOR": "alice", "PR": "12", "FAKE_EXIT": str(exit_code)},
    )
    assert result.returncode == job_exit and len(calls) == 1
    if annotation:
        assert annotation in result.stdout


def test_the_training_records_the_prs_number_and_diff_from_git_alone(tmp_path):
    """On GitHub's merge commit (fetch-depth 2), the recorded diff is exactly the PR's change."""
    repo = tmp_path / "repo"
    repo.mkdir()

    def git(*args):
        subprocess.run(
            ["git", "-c", "user.name=t", "-c", "user.email=t@example.invalid", *args],
            cwd=repo,
            check=True,
            capture_output=True,
        )

    git("init", "-q", "-b", "main")
    (repo / "train.py").write_text("lr = 0.1\n")
    git("add", "."), git("commit", "-qm", "base")
    git("checkout", "-qb", "pr")
    (repo / "train.py").write_text("lr = 10.0\n")
    git("commit", "-qam", "raise the learning rate")
    git("checkout", "-q", "main")
    (repo / "README").write_text("base moved on\n")
    git("add", "."), git("commit", "-qm", "base moves")
    git("merge", "-q", "--no-ff", "-m", "merge", "pr")
    script = step(workflow("trainwreck-train.yml")["jobs"]["train"], "Record the PR's number and diff")["run"]
    runner_temp = tmp_path / "runner-temp"
    result, _ = run_script(script, tmp_path, repo, {"PR_NUMBER": "42", "RUNNER_TEMP": str(runner_temp)})
    assert result.returncode == 0, result.stderr
    recorded = runner_temp / "trainwreck-triage"
    assert (recorded / "pr-number").read_text() == "42\n"
    diff = (recorded / "pr.diff").read_text()
    assert "-lr = 0.1\n+lr = 10.0" in diff and "README" not in diff
    # a push to the default branch (a baseline run) records neither, but the folder the log goes to
    pushed = tmp_path / "pushed-temp"
    result, _ = run_script(script, tmp_path, repo, {"PR_NUMBER": "", "RUNNER_TEMP": str(pushed)})
    assert result.returncode == 0, result.stderr
    assert (pushed / "trainwreck-triage").is_dir() and not list((pushed / "trainwreck-triage").iterdir())


def test_the_merge_step_writes_the_reports_and_the_job_summary_with_the_real_injector(tmp_path):
    """The report job's command against the real `injector merge`: a fork's PR (no comment, so
    no network), two shard reports in, the three reports and the job summary out."""
    shards = tmp_path / "shards"
    shards.mkdir()
    for index, status in ((1, "killed"), (2, "survived")):
        outcome = Outcome(
            mutant_id=f"m{index}",
            operator="missing-zero-grad",
            file="train.py",
            line=index,
            description="drop optimizer.zero_grad()",
            diff="",
            status=status,
        )
        shard = Report(
            project="trainer",
            guard="python -m pytest",
            device="cpu",
            baseline=Baseline(tests=3, duration=1.0),
            outcomes=(outcome,),
            duration=5.0,
            shards=(f"{index}/2",),
        )
        (shards / f"shard-{index}.json").write_text(json.dumps(shard.to_json()))
    summary = tmp_path / "summary.md"
    script = step(workflow("trainwreck-mutation.yml")["jobs"]["report"], MERGE_STEP)["run"]
    env = {
        "HEAD_REPO": "mallory/trainer",
        "GITHUB_ACTOR": "mallory",
        "PR": "12",
        "GITHUB_STEP_SUMMARY": str(summary),
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
    }
    result = subprocess.run(
        ["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", script],
        cwd=tmp_path,
        env={**os.environ, **env, "GITHUB_REPOSITORY": "team/trainer"},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    merged = json.loads((tmp_path / "report.json").read_text())
    assert merged["shards"] == ["1/2", "2/2"] and merged["counts"]["killed"] == 1
    assert (tmp_path / "report.html").read_text().lstrip().lower().startswith("<!doctype html")
    assert summary.read_text() == (tmp_path / "report.md").read_text() != ""
