"""A test method in a class: `injector suggest` copies test functions only, so a survivor that
only this reaches gets a stub."""

from trainer.loop import evaluate, make_loader


class TestEvaluate:
    def test_evaluate_gives_a_loss(self, model):
        assert evaluate(model, make_loader()) >= 0
