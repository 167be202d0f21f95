import math

import torch


def test_fit_reduces_the_loss(make_trainer, train_set, eval_set):
    trainer = make_trainer(epochs=3)
    history = trainer.fit(train_set, eval_set)
    assert all(math.isfinite(v) for v in history["loss"])
    first, last = sum(history["loss"][:3]) / 3, sum(history["loss"][-3:]) / 3
    assert last < 0.5 * first


def test_one_epoch_updates_every_parameter(make_trainer, train_set):
    trainer = make_trainer(epochs=1)
    before = {name: p.detach().clone() for name, p in trainer.model.named_parameters()}
    trainer.fit(train_set)
    for name, p in trainer.model.named_parameters():
        assert not torch.equal(p, before[name]), f"parameter {name} did not change after one epoch"


def test_evaluate_is_repeatable_and_restores_the_mode(make_trainer, eval_set):
    trainer = make_trainer()
    trainer.model.train()
    assert trainer.evaluate(eval_set) == trainer.evaluate(eval_set)
    assert trainer.model.training


def test_learning_rate_warms_up(make_trainer, train_set):
    trainer = make_trainer(epochs=1, warmup_steps=4)
    trainer.fit(train_set)
    assert trainer.scheduler.get_last_lr()[0] == trainer.config.lr


def test_predict_proba_is_a_distribution(make_trainer):
    trainer = make_trainer()
    probs = trainer.model.predict_proba(torch.randn(5, 4))
    torch.testing.assert_close(probs.sum(dim=1), torch.ones(5))
