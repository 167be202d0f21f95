import torch
from trainer.amp import DEVICE, Net, evaluate, fit

from injector import guards


CENTRES = torch.randn(4, 16, generator=torch.Generator().manual_seed(1234)) * 3


def blobs(seed, batches=8, size=32):
    g = torch.Generator().manual_seed(seed)
    centres = CENTRES
    out = []
    for _ in range(batches):
        y = torch.randint(0, 4, (size,), generator=g)
        out.append((centres[y] + torch.randn(size, 16, generator=g), y))
    return out


def test_fp16_training_learns_the_blobs():
    torch.manual_seed(0)
    model = Net().to(DEVICE)
    losses = fit(model, blobs(0))
    assert losses[-1] < losses[0] / 3
    assert evaluate(model, blobs(1)) > 0.9


def test_the_scaler_drives_every_step():
    torch.manual_seed(0)
    model = Net().to(DEVICE)
    batches = blobs(2, batches=1)
    guards.assert_scaler_used(lambda: fit(model, batches, epochs=1))


def test_evaluation_is_repeatable():
    torch.manual_seed(0)
    model = Net().to(DEVICE)
    fit(model, blobs(3, batches=2), epochs=1)
    data = blobs(4)
    assert evaluate(model, data) == evaluate(model, data)
