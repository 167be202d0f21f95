import torch

from trainer.steps import DEFAULT_STEP, MODEL, make_train_step


def test_the_factory_builds_a_step():
    model = torch.nn.Linear(3, 1)
    step = make_train_step(model, torch.optim.SGD(model.parameters(), lr=0.1), clip=1.0)
    assert callable(step)


def test_the_default_step_learns():
    torch.manual_seed(1)
    x = torch.randn(32, 3)
    y = x.sum(1, keepdim=True)
    losses = [DEFAULT_STEP(x, y) for _ in range(40)]
    assert losses[-1] < losses[0] / 4
