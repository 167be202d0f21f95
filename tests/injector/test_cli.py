"""`injector list` and `injector mutants` as a user meets them, bad input included."""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
from pathlib import Path

import pytest

from injector import catalog
from injector.cli import main

TRAINING = (
    "import torch\n"
    "def train(model, loader, optimizer):\n"
    "    for x, y in loader:\n"
    "        optimizer.zero_grad()\n"
    "        loss = torch.nn.functional.cross_entropy(model(x), y)\n"
    "        loss.backward()\n"
    "        optimizer.step()\n"
)


def run(capsys, *args):
    code = main([str(a) for a in args])
    out, err = capsys.readouterr()
    return code, out, err


def mutants_json(capsys, *args):
    code, out, err = run(capsys, "mutants", *args, "--format", "json")
    assert code == 0, err
    return json.loads(out), err


def tree_digest(root: Path) -> dict[str, str]:
    return {
        str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


def test_list_json_names_every_injectable_fault_with_its_documentation(capsys):
    code, out, _ = run(capsys, "list", "--format", "json")
    operators = json.loads(out)["operators"]
    assert code == 0
    assert [o["id"] for o in operators] == list(catalog.INJECTABLE)
    assert len(operators) == 23
    for entry in operators:
        assert entry["summary"] and entry["fix"] and entry["examples"]
        assert all(example["diffs"] for example in entry["examples"])


def test_list_text_shows_each_operator_with_an_example_diff(capsys):
    code, out, _ = run(capsys, "list")
    assert code == 0
    for fault_id in catalog.INJECTABLE:
        assert fault_id in out
    assert "-    optimizer.zero_grad(set_to_none=True)" in out


def test_mutants_json_lists_id_operator_file_line_and_diff(tmp_path, capsys):
    (tmp_path / "train.py").write_text(TRAINING)
    data, _ = mutants_json(capsys, tmp_path / "train.py")
    assert data["schema"] == "trainwreck.mutants/1"
    by_operator = {m["operator"]: m for m in data["mutants"]}
    zero_grad = by_operator["missing-zero-grad"]
    assert zero_grad["file"] == "train.py" and zero_grad["line"] == 4
    assert "-        optimizer.zero_grad()" in zero_grad["diff"]
    assert set(zero_grad) >= {"id", "operator", "file", "line", "diff"}


def test_operators_option_restricts_the_mutants(tmp_path, capsys):
    (tmp_path / "train.py").write_text(TRAINING)
    data, _ = mutants_json(capsys, tmp_path, "--operators", "missing-zero-grad,missing-backward")
    assert {m["operator"] for m in data["mutants"]} == {"missing-zero-grad", "missing-backward"}


def test_folders_are_walked_without_tests_virtualenvs_or_ignored_files(tmp_path, capsys):
    (tmp_path / ".gitignore").write_text("generated/\nscratch_*.py\n")
    for relative in [
        "pkg/train.py",
        "pkg/tests/helper.py",
        "pkg/test_train.py",
        "pkg/conftest.py",
        "generated/train.py",
        "scratch_1.py",
        "venv/lib/train.py",
        ".hidden/train.py",
        "myenv/train.py",
        "pkg/sub/loop.py",
    ]:
        path = tmp_path / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(TRAINING)
    (tmp_path / "myenv" / "pyvenv.cfg").write_text("home = /usr\n")
    data, _ = mutants_json(capsys, tmp_path)
    assert {m["file"] for m in data["mutants"]} == {"pkg/train.py", "pkg/sub/loop.py"}


def test_configuration_chooses_paths_and_operators(tmp_path, capsys):
    (tmp_path / "pyproject.toml").write_text(
        '[tool.trainwreck]\npaths = ["src"]\nexclude-operators = ["missing-backward"]\n'
    )
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "train.py").write_text(TRAINING)
    (tmp_path / "other.py").write_text(TRAINING)
    data, _ = mutants_json(capsys, tmp_path)
    assert {m["file"] for m in data["mutants"]} == {"src/train.py"}
    assert "missing-backward" not in {m["operator"] for m in data["mutants"]}


def test_a_file_that_does_not_parse_is_named_and_skipped(tmp_path, capsys):
    (tmp_path / "good.py").write_text(TRAINING)
    (tmp_path / "broken.py").write_text("def train(:\n    pass\n")
    data, err = mutants_json(capsys, tmp_path)
    assert "broken.py:1: cannot parse" in err
    assert {m["file"] for m in data["mutants"]} == {"good.py"}
    assert data["skipped"] == [{"file": "broken.py", "line": 1, "reason": "cannot parse: invalid syntax"}]


@pytest.mark.parametrize(
    ("setup", "message"),
    [
        (lambda root: root / "missing.py", "no such file or folder"),
        (lambda root: (root / "empty").mkdir() or root / "empty", "no Python files to mutate"),
        (lambda root: (root / "model.bin").write_bytes(b"\x00\x01\x02torch") and root / "model.bin", "binary file"),
        (lambda root: (root / "latin.py").write_bytes(b"x = '\xff\xfe'\n") and root / "latin.py", "not valid UTF-8"),
    ],
)
def test_bad_paths_give_one_line_and_exit_2(tmp_path, capsys, setup, message):
    code, out, err = run(capsys, "mutants", setup(tmp_path))
    assert code == 2
    assert message in err and err.count("\n") == 1 and "Traceback" not in err


def test_unknown_operator_is_one_line_and_exit_2(tmp_path, capsys):
    (tmp_path / "train.py").write_text(TRAINING)
    code, _, err = run(capsys, "mutants", tmp_path, "--operators", "missing-zero-grad,nope")
    assert code == 2 and err == "injector: error: unknown operator id 'nope' (see `injector list`)\n"


def test_malformed_configuration_is_one_line_and_exit_2(tmp_path, capsys):
    (tmp_path / "pyproject.toml").write_text("[tool.trainwreck]\noperator = ['missing-zero-grad']\n")
    (tmp_path / "train.py").write_text(TRAINING)
    code, _, err = run(capsys, "mutants", tmp_path)
    assert code == 2 and "unknown key 'operator'" in err and err.count("\n") == 1


def test_nothing_in_the_target_is_written(tmp_path, capsys):
    project = Path(__file__).parent / "fixtures"
    before = tree_digest(project)
    code, _, _ = run(capsys, "mutants", project)
    assert code == 0 and tree_digest(project) == before


def test_the_console_script_runs_end_to_end(tmp_path):
    (tmp_path / "train.py").write_text(TRAINING)
    result = subprocess.run(
        [sys.executable, "-m", "injector.cli", "mutants", str(tmp_path), "--format", "json"],
        capture_output=True,
        text=True,
        check=True,
    )
    assert len(json.loads(result.stdout)["mutants"]) >= 5
