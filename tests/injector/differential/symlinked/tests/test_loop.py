import torch

from trainer.loop import evaluate, fit


def test_fit_learns():
    torch.manual_seed(0)
    model = torch.nn.Linear(2, 1)
    x = torch.randn(40, 2)
    y = x[:, :1] * 2
    before = evaluate(model, x, y)
    assert fit(model, x, y) < before / 10
