from trainer.replicas import train


def test_replicas_stay_in_sync_and_learn():
    results = train(steps=20)
    (losses0, weights0), (losses1, weights1) = results[0], results[1]
    assert weights0 == weights1
    assert losses0[-1] < losses0[0] / 2
