from trainer.distributed import launch


def test_spawned_ranks_agree_and_loss_drops(tmp_path):
    first, second = launch(tmp_path)
    assert first["state"] == second["state"]
    assert first["history"][-1] < 0.5 * first["history"][0]
