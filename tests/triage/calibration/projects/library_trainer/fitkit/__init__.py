"""fitkit: a Trainer, a couple of models and the metrics they report."""

from fitkit.models import MLPClassifier
from fitkit.trainer import Trainer, TrainerConfig

__all__ = ["MLPClassifier", "Trainer", "TrainerConfig"]
