"""Guards on the model: probabilities are normalised, normalisation survives constant input."""

import torch

from demo_train.model import LayerNorm
from demo_train.train import build_model


def test_predict_proba_sums_to_one_over_classes(make_config):
    config = make_config()
    model = build_model(config).eval()
    x = torch.randn(4, config.seq_len, config.n_features)

    probs = model.predict_proba(x)

    assert probs.shape == (4, config.num_classes)
    assert (probs >= 0).all()
    torch.testing.assert_close(probs.sum(dim=-1), torch.ones(4))


def test_layer_norm_is_finite_on_constant_input():
    norm = LayerNorm(16)
    out = norm(torch.zeros(2, 8, 16))
    assert torch.isfinite(out).all()
