import math
from unittest.mock import Mock

import pytest
import torch
from sknet import NeuralNetClassifier
from torch import nn


@pytest.fixture(scope="module")
def net(classifier_module):
    return NeuralNetClassifier(classifier_module, max_epochs=10, lr=0.1)


@pytest.fixture(scope="module")
def net_fit(net, classifier_data):
    # fitted once for the module: the tests below only read it
    X, y = classifier_data
    return net.fit(X, y)


def test_net_learns(net_fit):
    train_losses = net_fit.history[:, "train_loss"]
    assert train_losses[0] > 2 * train_losses[-1]


def test_predict_and_predict_proba(net_fit, classifier_data):
    X = classifier_data[0]
    y_proba = net_fit.predict_proba(X)
    assert torch.allclose(y_proba.sum(1), torch.ones(len(X)), rtol=1e-5)
    y_pred = net_fit.predict(X)
    assert torch.equal(y_proba.argmax(1), y_pred)


def test_score(net_fit, classifier_data):
    X, y = classifier_data
    accuracy = net_fit.score(X, y)
    assert 0.0 <= accuracy <= 1.0


def test_takes_log_with_nllloss(classifier_module, classifier_data):
    net = NeuralNetClassifier(classifier_module, criterion=nn.NLLLoss, max_epochs=1, verbose=0)
    net.initialize()
    mock_loss = Mock(side_effect=nn.NLLLoss())
    net.criterion_.forward = mock_loss
    net.partial_fit(*classifier_data)
    # the loss was given log-probabilities
    for (y_log, _), _ in mock_loss.call_args_list:
        assert (y_log < 0).all()
        y_proba = torch.exp(y_log)
        assert torch.isclose(torch.ones(len(y_proba)), y_proba.sum(1)).all()


def test_high_learning_rate(classifier_module, classifier_data):
    # a large step must not make every epoch's loss NaN
    net = NeuralNetClassifier(classifier_module, max_epochs=2, lr=2, optimizer=torch.optim.Adam, verbose=0)
    net.fit(*classifier_data)
    assert any(not math.isnan(v) for v in net.history[:, "train_loss"])


def test_validation_accuracy_is_recorded(net_fit):
    accuracies = net_fit.history[:, "valid_acc"]
    assert len(accuracies) == 10
    assert accuracies[-1] > 0.7
