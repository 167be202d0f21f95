import pytest
import torch
from sknet.toy import make_classifier


def make_classification(n_samples=1000, n_features=20, n_informative=10, seed=0):
    """Two classes in clusters around the corners of a cube in the informative features; the
    other features are noise."""
    g = torch.Generator().manual_seed(seed)
    y = torch.randint(0, 2, (n_samples,), generator=g)
    corners = torch.randint(0, 2, (2, n_informative), generator=g).float() * 2 - 1
    X = torch.randn(n_samples, n_features, generator=g)
    X[:, :n_informative] += corners[y]
    mix = torch.randn(n_informative, n_informative, generator=g) / n_informative**0.5
    X[:, :n_informative] = X[:, :n_informative] @ (torch.eye(n_informative) + mix)
    return X, y


@pytest.fixture(scope="module")
def classifier_data():
    return make_classification()


@pytest.fixture(scope="module")
def classifier_module():
    return make_classifier(input_units=20, hidden_units=10, num_hidden=2, dropout=0.5)
