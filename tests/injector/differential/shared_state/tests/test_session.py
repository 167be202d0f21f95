"""The first test configures the module; the later ones rely on it (in collection order)."""

from trainer import session


def test_configure_then_fit_long():
    session.configure(seed=0, lr=0.05)
    losses = session.fit(400)
    assert losses[-1] < 0.01


def test_fit_short_uses_the_configuration():
    losses = session.fit(30)
    assert losses[-1] < losses[0]


def test_every_run_was_recorded():
    assert len(session.RUNS) >= 2
