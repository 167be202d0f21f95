"""What an adopter's CI installs as trainwreck (`injector init --package`, `TRAINWRECK_PACKAGE`,
or where this trainwreck was installed from), and that the install steps `injector init` writes
really resolve it: the workflows' own pip commands are run (offline, `--dry-run` through pip's
environment) against a pinned git URL of this very project."""

from __future__ import annotations

import hashlib
import json
import os
import re
import subprocess
import sys
from importlib import metadata
from pathlib import Path

import pytest
from ruamel.yaml import YAML

from injector import package
from injector.cli import main

ROOT = Path(__file__).resolve().parents[2]
WORKFLOWS = ("trainwreck-mutation.yml", "trainwreck-train.yml", "trainwreck-triage.yml")
GIT = {
    "GIT_AUTHOR_NAME": "t",
    "GIT_AUTHOR_EMAIL": "t@example.com",
    "GIT_COMMITTER_NAME": "t",
    "GIT_COMMITTER_EMAIL": "t@example.com",
    "GIT_CONFIG_GLOBAL": os.devnull,
    "GIT_CONFIG_NOSYSTEM": "1",
}
# The expression a workflow sets TRAINWRECK_PACKAGE to: the repository variable, else a default.
PACKAGE_ENV = re.compile(r"\$\{\{ vars\.TRAINWRECK_PACKAGE \|\| '((?:[^']|'')*)' \}\}")


def git(folder: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-C", str(folder), *args], check=True, capture_output=True, text=True, env={**os.environ, **GIT}
    ).stdout.strip()


def digest(root: Path) -> dict[str, str]:
    return {
        p.relative_to(root).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


@pytest.fixture(scope="module")
def source(tmp_path_factory) -> tuple[Path, str]:
    """This project's current files (tracked and new, not ignored) as a git repository: the
    stand-in for its GitHub repository. Returns its folder and HEAD commit."""
    folder = tmp_path_factory.mktemp("trainwreck-source")
    listed = subprocess.run(
        ["git", "-C", str(ROOT), "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        check=True,
        capture_output=True,
    ).stdout
    for name in filter(None, listed.decode().split("\0")):
        origin = ROOT / name
        if origin.is_file():  # a file deleted in the working tree is not part of it
            target = folder / name
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(origin.read_bytes())
    git(folder, "init", "-q")
    git(folder, "add", "-A")
    git(folder, "commit", "-q", "-m", "trainwreck as an adopter would pin it")
    return folder, git(folder, "rev-parse", "HEAD")


@pytest.fixture
def repo(tmp_path, monkeypatch) -> Path:
    monkeypatch.delenv(package.ENV, raising=False)
    root = tmp_path / "trainer"
    (root / ".git").mkdir(parents=True)
    return root


def init(capsys, *args: str) -> tuple[int, str, str]:
    code = main(["init", *args])
    out, err = capsys.readouterr()
    return code, out, err


def install_scripts(repo: Path) -> dict[str, str]:
    """The shell lines of the generated workflows that install trainwreck, each once: a torch-free
    step whole (its later lines read the installed package's metadata), else its pip line."""
    scripts = {}
    for name in WORKFLOWS:
        document = YAML(typ="safe").load((repo / ".github" / "workflows" / name).read_text())
        for job in document["jobs"].values():
            for step in job["steps"]:
                script = step.get("run", "")
                if '"$TRAINWRECK_PACKAGE"' not in script:
                    continue
                if "--no-deps" in script:
                    scripts.setdefault(script, step["name"])
                else:  # a GPU job's venv of the runner's own torch: the pip line, in this venv
                    line = next(line.strip() for line in script.splitlines() if '"$TRAINWRECK_PACKAGE"' in line)
                    scripts.setdefault(line, step["name"])
    return scripts


def package_default(repo: Path, name: str) -> str:
    document = YAML(typ="safe").load((repo / ".github" / "workflows" / name).read_text())
    found = PACKAGE_ENV.fullmatch(document["env"]["TRAINWRECK_PACKAGE"])
    assert found, document["env"]["TRAINWRECK_PACKAGE"]
    return found.group(1).replace("''", "'")


def pip_offline(tmp_path: Path, script: str, spec: str) -> subprocess.CompletedProcess[str]:
    """Run a workflow's install script as its job would (bash -e, `python` first on PATH), with
    pip told through its environment to resolve only (--dry-run), offline (no index, no config,
    the build backend from this environment)."""
    env = {
        **os.environ,
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
        "TRAINWRECK_PACKAGE": spec,
        "RUNNER_TEMP": str(tmp_path),
        "PIP_CONFIG_FILE": os.devnull,
        "PIP_DRY_RUN": "1",
        "PIP_NO_INDEX": "1",
        "PIP_FIND_LINKS": "",
        "PIP_NO_BUILD_ISOLATION": "0",
        "PIP_DISABLE_PIP_VERSION_CHECK": "1",
        **GIT,
    }
    env.pop("PIP_CONSTRAINT", None)
    return subprocess.run(
        ["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", script],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
    )


def test_the_install_steps_init_writes_resolve_the_pinned_package(capsys, repo, source, tmp_path):
    folder, commit = source
    # pip's PEP 508 URLs need a host: file://localhost/... is this machine's "GitHub".
    spec = f"trainwreck @ git+file://localhost{folder}@{commit}"
    code, out, err = init(capsys, str(repo), "--package", spec)
    assert code == 0, err
    assert f"package: the workflows install {spec} (from --package)" in out
    assert "note:" not in out  # pinned to a commit
    for name in WORKFLOWS:
        assert package_default(repo, name) == spec
    scripts = install_scripts(repo)
    assert len(scripts) == 2  # `pip install SPEC` (GPU jobs) and the torch-free install
    for script, step in scripts.items():
        result = pip_offline(tmp_path, script, package_default(repo, WORKFLOWS[0]))
        assert result.returncode == 0, f"{step}: {result.stdout[-2000:]}{result.stderr[-2000:]}"
        assert "Would install trainwreck-" in result.stdout, step
    # The pin is what pip fetches: a commit the repository does not have fails the same command.
    missing = f"trainwreck @ git+file://localhost{folder}@{'0' * 40}"
    result = pip_offline(tmp_path, next(iter(scripts)), missing)
    assert result.returncode != 0


def test_the_shipped_default_the_workflows_carry_is_replaced_in_every_workflow(capsys, repo, monkeypatch):
    monkeypatch.setenv(package.ENV, "git+https://github.com/acme/trainwreck@" + "a" * 40)
    assert init(capsys, str(repo))[0] == 0
    for name in WORKFLOWS:
        text = (repo / ".github" / "workflows" / name).read_text()
        assert "OWNER" not in text.split("\nname:", 1)[1]  # only the header's example names OWNER
        assert package_default(repo, name) == "trainwreck @ git+https://github.com/acme/trainwreck@" + "a" * 40


def test_the_option_wins_over_the_environment_and_a_rerun_updates_the_pin(capsys, repo, monkeypatch):
    monkeypatch.setenv(package.ENV, "trainwreck @ git+https://github.com/acme/trainwreck@" + "b" * 40)
    assert init(capsys, str(repo), "--package", "trainwreck==0.3.0")[0] == 0
    assert package_default(repo, "trainwreck-train.yml") == "trainwreck==0.3.0"
    code, out, _ = init(capsys, str(repo))  # an upgrade: the environment's pin now
    assert code == 0 and "update .github/workflows/trainwreck-train.yml" in out.replace("updated", "update")
    assert package_default(repo, "trainwreck-triage.yml").endswith("@" + "b" * 40)


def test_a_quote_in_the_spec_is_escaped_for_the_workflow_expression(capsys, repo):
    spec = "trainwreck @ git+https://github.com/acme/trainwreck@" + "c" * 40 + " ; python_version >= '3.11'"
    assert init(capsys, str(repo), "--package", spec)[0] == 0
    assert package_default(repo, "trainwreck-mutation.yml") == spec


def test_an_unpinned_git_url_gets_a_note(capsys, repo):
    code, out, _ = init(capsys, str(repo), "--package", "git+https://github.com/acme/trainwreck@main")
    assert code == 0
    assert "note: the git URL names 'main', not a commit" in out


@pytest.mark.parametrize(
    "spec, message",
    [
        ("numpy==2.0", "installs 'numpy', not trainwreck"),
        ("trainwreck @ ", "not a pip requirement"),
        ("  ", "--package is empty"),
        ("trainwreck @ git+https://github.com/a/b@${{ secrets.X }}", "braces and control characters"),
        ("trainwreck==1\nrun: curl", "braces and control characters"),
    ],
)
def test_a_bad_spec_is_one_line_exit_2_and_writes_nothing(capsys, repo, spec, message):
    before = digest(repo)
    code, out, err = init(capsys, str(repo), "--package", spec)
    assert code == 2 and message in err and len(err.strip().splitlines()) == 1
    assert digest(repo) == before


def test_with_no_way_to_tell_init_says_so_and_writes_nothing(capsys, repo, monkeypatch):
    monkeypatch.setattr(package, "installed", lambda: package.Source(None, "no install record"))
    before = digest(repo)
    code, _, err = init(capsys, str(repo))
    assert code == 2 and len(err.strip().splitlines()) == 1
    assert "cannot tell what CI should install as trainwreck (no install record)" in err
    assert "--package" in err and package.ENV in err
    assert digest(repo) == before


def test_with_no_way_to_tell_an_installed_pin_is_kept(capsys, repo, monkeypatch):
    pinned = "trainwreck @ git+https://github.com/acme/trainwreck@" + "d" * 40
    assert init(capsys, str(repo), "--package", pinned)[0] == 0
    monkeypatch.setattr(package, "installed", lambda: package.Source(None, "no install record"))
    code, out, _ = init(capsys, str(repo))
    assert code == 0 and "from the workflows already installed" in out
    assert package_default(repo, "trainwreck-train.yml") == pinned


# -- where this trainwreck came from ---------------------------------------------------------------


def fake_install(tmp_path: Path, direct_url: dict | None) -> metadata.Distribution:
    """A real installed distribution's metadata folder, as pip writes it."""
    info = tmp_path / "site" / "trainwreck-0.4.0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: trainwreck\nVersion: 0.4.0\n")
    (info / "INSTALLER").write_text("pip\n")
    if direct_url is not None:
        (info / "direct_url.json").write_text(json.dumps(direct_url))
    return metadata.PathDistribution(info)


def test_an_install_from_git_gives_its_url_at_its_commit_without_credentials(tmp_path, monkeypatch):
    commit = "e" * 40
    dist = fake_install(
        tmp_path,
        {
            "url": "https://bot:s3cret@github.com/acme/trainwreck.git",
            "vcs_info": {"vcs": "git", "commit_id": commit, "requested_revision": "v0.4.0"},
        },
    )
    monkeypatch.setattr(package, "_installed_distribution", lambda: dist)
    found = package.resolve(None, {})
    assert found.spec == f"trainwreck @ git+https://github.com/acme/trainwreck@{commit}"
    assert "s3cret" not in found.spec + found.origin


def test_an_install_from_an_index_gives_that_version(tmp_path, monkeypatch):
    dist = fake_install(tmp_path, None)
    monkeypatch.setattr(package, "_installed_distribution", lambda: dist)
    assert package.resolve(None, {}).spec == "trainwreck==0.4.0"


def test_an_install_from_a_local_wheel_cannot_be_reached_from_ci(tmp_path, monkeypatch):
    dist = fake_install(tmp_path, {"url": "file:///home/me/dist/trainwreck-0.4.0-py3-none-any.whl", "archive_info": {}})
    monkeypatch.setattr(package, "_installed_distribution", lambda: dist)
    found = package.resolve(None, {})
    assert found.spec is None and "CI cannot reach" in found.origin


def test_a_checkout_gives_its_origin_at_head_once_a_remote_branch_holds_it(tmp_path, monkeypatch):
    checkout = tmp_path / "trainwreck"
    checkout.mkdir()
    (checkout / "README.md").write_text("trainwreck\n")
    git(checkout, "init", "-q")
    git(checkout, "add", "-A")
    git(checkout, "commit", "-q", "-m", "first")
    head = git(checkout, "rev-parse", "HEAD")
    git(checkout, "remote", "add", "origin", "git@github.com:acme/trainwreck.git")
    dist = fake_install(tmp_path, {"url": checkout.as_uri(), "dir_info": {"editable": True}})
    monkeypatch.setattr(package, "_installed_distribution", lambda: dist)
    unpushed = package.resolve(None, {})
    assert unpushed.spec is None and "push it first" in unpushed.origin
    git(checkout, "update-ref", "refs/remotes/origin/main", head)  # as after a push and fetch
    assert package.resolve(None, {}).spec == f"trainwreck @ git+https://github.com/acme/trainwreck@{head}"


@pytest.mark.parametrize(
    "url, public",
    [
        ("git@github.com:acme/trainwreck.git", "https://github.com/acme/trainwreck"),
        ("ssh://git@github.com/acme/trainwreck.git", "https://github.com/acme/trainwreck"),
        ("https://x-access-token:tok@ghe.example.com/ml/trainwreck", "https://ghe.example.com/ml/trainwreck"),
        ("/srv/git/trainwreck.git", None),
        ("file:///srv/git/trainwreck.git", None),
    ],
)
def test_git_remotes_become_https_urls_any_ci_can_clone(url, public):
    assert package.public_git_url(url) == public
