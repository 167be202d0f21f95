"""How `injector suggest` drafts a guard test from a survivor's reaching tests (no campaign)."""

from __future__ import annotations

from pathlib import Path

from injector.guards.faults import WATCHED
from injector.outcomes import SURVIVED, Outcome
from injector.suggest.write import STUB_MARK, draft, only, options_for

DIFFERENTIAL = Path(__file__).parent / "differential"


def survivor(operator: str, covered_by: tuple[str, ...], diff: str = "") -> Outcome:
    return Outcome("0123456789ab", operator, "train.py", 40, "a mutant", diff, SURVIVED, covered_by=covered_by)


def test_a_copied_test_keeps_paths_computed_from_its_own_file():
    # The reaching test finds its script from __file__; the copy lives one folder deeper.
    outcome = survivor("missing-zero-grad", (".tmp/trainwreck-1-x/slot0/tests/test_cli.py::test_the_script_learns",))
    made = draft(outcome, DIFFERENTIAL / "subprocess_script", "tests/trainwreck_guards", WATCHED)
    assert made.stub is None
    assert "_COPIED_FROM = os.path.join(os.path.dirname(os.path.abspath(__file__)), '../test_cli.py')" in made.text
    assert 'SCRIPT = Path(_COPIED_FROM).resolve().parent.parent / "train.py"' in made.text
    assert "with watch('missing-zero-grad'):" in made.text
    compile(made.text, "generated.py", "exec")


def test_a_guard_command_becomes_a_test_that_runs_it_watched():
    outcome = survivor("no-shuffle", ("python -m smoke.train --steps 40",))
    made = draft(outcome, DIFFERENTIAL / "command_guard", "tests/trainwreck_guards", WATCHED)
    assert "[sys.executable, '-m', 'smoke.train', '--steps', '40']" in made.text
    # first in this process: no fresh interpreter importing torch again
    assert "code = run_python(['-m', 'smoke.train', '--steps', '40'], cwd=PROJECT)" in made.text
    assert [c.name for c in made.candidates] == [
        "test_guard_no_shuffle_via_guard_command_in_process",
        "test_guard_no_shuffle_via_guard_command",
    ]
    assert "PROJECT = Path(__file__).resolve().parents[2]" in made.text
    compile(made.text, "generated.py", "exec")


def test_a_kept_in_process_command_test_imports_nothing_it_does_not_use():
    outcome = survivor("no-shuffle", ("python -m smoke.train --steps 40",))
    made = draft(outcome, DIFFERENTIAL / "command_guard", "tests/trainwreck_guards", WATCHED)
    kept = only(made, {"test_guard_no_shuffle_via_guard_command_in_process"}).text
    assert "import subprocess" not in kept and "import sys" not in kept
    assert "from injector.guards import run_python, watch" in kept
    both = only(made, {c.name for c in made.candidates}).text
    assert "import subprocess\nimport sys\n" in both


def test_the_softmax_axis_is_read_from_the_code_the_mutant_changed():
    diff = "-        weights = torch.softmax(scores, dim=-1)\n+        weights = torch.softmax(scores, dim=-2)\n"
    outcome = survivor(
        "wrong-softmax-dim", ("tests/test_distributed.py::test_spawned_ranks_agree_and_loss_drops",), diff
    )
    made = draft(outcome, DIFFERENTIAL / "spawn_ddp", "tests/trainwreck_guards", WATCHED)
    assert "with watch('wrong-softmax-dim', class_axis=-1):" in made.text
    assert "def test_guard_wrong_softmax_dim_via_spawned_ranks_agree_and_loss_drops(tmp_path):" in made.text


def test_only_keeps_the_named_tests_and_the_helpers():
    outcome = survivor("missing-zero-grad", ("tests/test_cli.py::test_the_script_learns",))
    made = draft(outcome, DIFFERENTIAL / "subprocess_script", "tests", WATCHED)
    assert "def test_guard_" not in only(made, set()).text
    assert "SCRIPT = " in only(made, set()).text


def test_a_survivor_no_test_function_reaches_is_a_marked_stub():
    made = draft(survivor("lr-too-high", ("tests/test_cli.py::TestCli::test_learns",)), Path("."), "tests", WATCHED)
    assert made.stub and STUB_MARK in made.text
    assert made.text.count("def check_guard():") == 1
    compile(made.text, "stub.py", "exec")


def test_an_attention_mask_guard_watches_the_class_that_masked_and_the_kind_of_mask(tmp_path):
    (tmp_path / "model.py").write_text(
        "class Decoder(nn.Module):\n"
        "    def forward(self, x):\n"
        "        scores = x @ x.mT\n"
        "        scores = scores.masked_fill(self.causal, float('-inf'))\n"
        "        return scores.softmax(-1) @ x\n"
    )
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_model.py").write_text("def test_decodes(model):\n    model(x)\n")
    diff = "-        scores = scores.masked_fill(self.causal, float('-inf'))\n+        scores = scores\n"
    outcome = Outcome(
        "0123456789ab",
        "missing-attention-mask",
        "model.py",
        4,
        "a mutant",
        diff,
        SURVIVED,
        covered_by=("tests/test_model.py::test_decodes",),
    )
    made = draft(outcome, tmp_path, "tests/trainwreck_guards", WATCHED)
    assert "with watch('missing-attention-mask', kind='causal', module='Decoder'):" in made.text
    padding = survivor("missing-attention-mask", (), "-        y = attn(x, key_padding_mask=pad)\n")
    assert options_for(padding) == {"kind": "padding"}
