import torch
from sknet import NeuralNetClassifier


def new_net(module_cls, **kwargs):
    return NeuralNetClassifier(module_cls, **{"max_epochs": 2, "lr": 0.1, "verbose": 0, **kwargs})


def test_history_default_keys(classifier_module, classifier_data):
    net = new_net(classifier_module).fit(*classifier_data)
    expected_keys = {"train_loss", "valid_loss", "epoch", "dur", "batches"}
    for row in net.history:
        assert expected_keys.issubset(row)


def test_batch_losses_are_numbers(classifier_module, classifier_data):
    net = new_net(classifier_module).fit(*classifier_data)
    losses = net.history[-1, "batches", :, "train_loss"]
    assert all(isinstance(v, float) for v in losses if v is not None)


def test_fit_changes_every_parameter(classifier_module, classifier_data):
    net = new_net(classifier_module, max_epochs=1).initialize()
    before = {name: p.detach().clone() for name, p in net.module_.named_parameters()}
    net.partial_fit(*classifier_data)
    unchanged = [name for name, p in net.module_.named_parameters() if torch.equal(p, before[name])]
    assert not unchanged


def test_predict_proba_is_deterministic(classifier_module, classifier_data):
    net = new_net(classifier_module).fit(*classifier_data)
    X = classifier_data[0][:50]
    net.module_.train()
    assert torch.equal(net.predict_proba(X), net.predict_proba(X))


def test_partial_fit_keeps_learning(classifier_module, classifier_data):
    net = new_net(classifier_module, max_epochs=3).fit(*classifier_data)
    net.partial_fit(*classifier_data, epochs=3)
    losses = net.history[:, "train_loss"]
    assert len(losses) == 6
    assert losses[-1] < losses[0]


def test_verbose_prints_an_epoch_table(classifier_module, classifier_data, capsys):
    new_net(classifier_module, verbose=1).fit(*classifier_data)
    out = capsys.readouterr().out.splitlines()
    assert out[0].split() == ["epoch", "train_loss", "valid_loss", "valid_acc", "dur"]
    assert len(out) == 4
