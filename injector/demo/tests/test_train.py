"""Guards on the training loop: does it learn, step, clear gradients, evaluate reproducibly?"""

import math

import torch

from demo_train.data import make_datasets, make_loaders
from demo_train.train import build_model, evaluate, train


def test_loss_decreases(make_config):
    history = train(make_config(epochs=3, accum_steps=2, lr=1e-2))

    assert all(math.isfinite(loss) for loss in history["train_loss"])
    assert history["train_loss"][-1] < history["train_loss"][0]


def test_one_step_changes_every_parameter(make_config):
    config = make_config(n_train=16, batch_size=16, epochs=1)
    model = build_model(config)
    before = {name: p.detach().clone() for name, p in model.named_parameters()}

    train(config, model=model)

    unchanged = [name for name, p in model.named_parameters() if torch.equal(p, before[name])]
    assert not unchanged


def test_no_stale_gradients_after_training(make_config):
    # Every optimizer step must clear the gradients it used, or they add up across steps.
    config = make_config(epochs=1, accum_steps=2)
    model = build_model(config)

    train(config, model=model)

    assert all(p.grad is None for p in model.parameters())


def test_overfits_one_batch(make_config):
    config = make_config(n_train=16, n_eval=16, batch_size=16, dropout=0.0, epochs=30, lr=3e-2)
    history = train(config)
    assert history["train_loss"][-1] < 0.05


def test_evaluate_is_deterministic(make_config):
    config = make_config()
    model = build_model(config)  # fresh modules start in training mode
    train_set, eval_set = make_datasets(
        config.n_train, config.n_eval, num_classes=config.num_classes, seq_len=config.seq_len,
        n_features=config.n_features,
    )
    _, eval_loader, _ = make_loaders(train_set, eval_set, config.batch_size)

    first = evaluate(model, eval_loader, torch.device("cpu"))
    second = evaluate(model, eval_loader, torch.device("cpu"))

    assert first == second


def test_amp_training_stays_finite_and_learns(make_config):
    history = train(make_config(use_amp=True, epochs=2))

    assert all(math.isfinite(loss) for loss in history["train_loss"] + history["eval_loss"])
    assert history["train_loss"][-1] < history["train_loss"][0]
