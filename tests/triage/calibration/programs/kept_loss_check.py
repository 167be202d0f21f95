"""A training check whose loop keeps each loss tensor (`history.append(loss)`, no `.item()`).

    python -m pytest -q tests/triage/calibration/programs/kept_loss_check.py -p no:cacheprovider \\
        > tests/triage/calibration/programs/logs/kept_loss_pytest.log 2>&1
    python tests/triage/calibration/programs/kept_loss_check.py > tests/triage/calibration/programs/logs/kept_loss_script.log 2>&1

Under torch the kept tensors still compare (`history[-1] < history[0]` is a tensor), so the
fault shows where the history meets plain Python: `statistics.mean` cannot average tensors
(`can't convert type 'Tensor' to numerator/denominator`) and `json.dumps` cannot write them
(`Object of type Tensor is not JSON serializable`). The file's name keeps it out of the suite's
collection; tests/triage/test_triage_calibration.py reads the logs it writes.
"""

import json
import statistics

import torch


def train(steps: int = 5) -> list:
    torch.manual_seed(0)
    model = torch.nn.Linear(4, 1)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
    x, y = torch.randn(32, 4), torch.randn(32, 1)
    history = []
    for _ in range(steps):
        optimizer.zero_grad()
        loss = torch.nn.functional.mse_loss(model(x), y)
        loss.backward()
        optimizer.step()
        history.append(loss)  # the fault: the tensor, with its graph, not loss.item()
    return history


def test_the_average_loss_falls():
    history = train()
    assert statistics.mean(history[-2:]) < statistics.mean(history[:2])


if __name__ == "__main__":
    print(json.dumps({"loss": train()}))
