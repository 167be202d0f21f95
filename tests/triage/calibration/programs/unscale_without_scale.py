"""A mixed-precision step that lost its scaled backward: `scaler.scale(loss).backward()` became
`loss.backward()`, while the clipping still unscales first.

    python tests/triage/calibration/programs/unscale_without_scale.py > unscale_without_scale.log 2>&1

GradScaler learns its scale lazily in `scale()`, so `unscale_` in an iteration that never called
it raises (torch 2.x: `AssertionError: Attempted unscale_ but _scale is None.  This may indicate
your script did not use scaler.scale(loss or outputs) earlier in the iteration.`). Runs on CPU.
The log it writes is the one tests/triage/test_triage_calibration.py reads.
"""

import torch
from torch import nn

torch.manual_seed(0)
model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 3))
optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
scaler = torch.amp.GradScaler("cpu")
x, y = torch.randn(32, 8), torch.randint(0, 3, (32,))
for step in range(3):
    optimizer.zero_grad()
    with torch.autocast("cpu", dtype=torch.bfloat16):
        loss = nn.functional.cross_entropy(model(x), y)
    print(f"step {step} loss {loss.item():.4f}", flush=True)
    loss.backward()
    scaler.unscale_(optimizer)
    nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    scaler.step(optimizer)
    scaler.update()
