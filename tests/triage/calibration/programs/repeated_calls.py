"""A model left in training mode (dropout on), asked the same thing twice, compared four ways.

Run under pytest (`python -m pytest -q programs/repeated_calls.py`), every test fails the way a
project's determinism check fails when evaluation forgets `model.eval()`: pytest prints the two
answers of the repeated call. tests/triage/test_triage_calibration4.py reads that real output.
"""

import torch

torch.manual_seed(0)
MODEL = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.Dropout(0.5), torch.nn.Linear(16, 2))
X = torch.randn(4, 8)


def predict(x):
    with torch.no_grad():
        return MODEL(x).softmax(-1)


def test_allclose():
    assert torch.allclose(predict(X), predict(X), atol=1e-6)


def test_equal_of_two_names():
    first = predict(X)
    second = predict(X)
    assert torch.equal(first, second)


def test_all_equal():
    assert (predict(X) == predict(X)).all()


def test_torch_all():
    assert torch.all(predict(X) == predict(X))
