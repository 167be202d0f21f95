from trainer.loop import SGD, Model, Param, drain, evaluate, train


def test_loss_goes_down():
    history = train(Model(), steps=5)
    assert history[-1] < history[0]


def test_evaluate_switches_to_eval_mode():
    model = Model()
    evaluate(model)
    assert model.training is False


def test_drain_finishes():
    optimizer = SGD([Param(1.0)], lr=0.1)
    optimizer.pending = 3
    drain(optimizer)
    assert optimizer.pending == 0
