"""The training history: one row per epoch, each with the rows of its batches."""

from __future__ import annotations


class History(list):
    """A list of epoch rows (dicts). `history[:, "train_loss"]` reads one key of every epoch,
    `history[-1, "batches", :, "train_loss"]` one key of every batch of the last epoch that has it."""

    def new_epoch(self) -> None:
        self.append({"batches": []})

    def new_batch(self) -> None:
        self[-1]["batches"].append({})

    def record(self, key, value) -> None:
        self[-1][key] = value

    def record_batch(self, key, value) -> None:
        self[-1]["batches"][-1][key] = value

    def __getitem__(self, index):
        if not isinstance(index, tuple):
            return super().__getitem__(index)
        return _select(list(self), index)


def _select(rows, index):
    head, rest = index[0], index[1:]
    if isinstance(head, slice):
        picked = rows[head]
        if not rest:
            return picked
        out = []
        for row in picked:
            try:
                out.append(_select(row, rest))
            except KeyError:
                continue  # rows without the key (a validation batch has no train_loss) are left out
        return out
    if isinstance(head, int):
        row = rows[head]
        return _select(row, rest) if rest else row
    value = rows[head]
    return _select(value, rest) if rest else value
