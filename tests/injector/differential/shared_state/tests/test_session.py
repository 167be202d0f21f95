"""The first test writes the configuration file; the next one relies on it (collection order)."""

from trainer import session


def test_configure_then_fit_long():
    session.configure(seed=0, lr=0.05)
    losses = session.fit(400)
    assert losses[-1] < 0.01


def test_fit_short_uses_the_configuration():
    losses = session.fit(30)
    assert losses[-1] < losses[0]
