"""A weak guard: it checks that training runs, not that it trains right."""

from trainer.loop import fit, make_loader


def test_fit_runs(model):
    losses = fit(model, make_loader())
    assert len(losses) == 8
