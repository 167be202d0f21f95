import copy

import pytest
import torch

from denoise.fit import fit, score, sine_waves
from denoise.net import ConvAutoencoder, snr_db


@pytest.fixture(scope="module")
def data():
    return sine_waves(128, seed=3)


def new_model():
    torch.manual_seed(0)
    return ConvAutoencoder()


def test_training_improves_the_signal(data):
    model = new_model()
    before = score(model, data)
    losses = fit(model, data, epochs=6)
    after = score(model, data)
    assert losses[-1] < losses[0]
    assert after > before + 3.0


def test_a_step_moves_the_weights(data):
    model = new_model()
    start = copy.deepcopy(model.state_dict())
    fit(model, data, epochs=1, verbose=False)
    moved = [k for k, v in model.state_dict().items() if v.is_floating_point() and not torch.equal(v, start[k])]
    assert len(moved) == len([v for v in start.values() if v.is_floating_point()])


def test_score_does_not_depend_on_the_call(data):
    model = new_model()
    model.train()
    assert score(model, data) == score(model, data)


def test_snr_of_a_perfect_estimate_is_finite():
    clean = torch.ones(2, 1, 16)
    assert torch.isfinite(snr_db(clean, clean)).all()
