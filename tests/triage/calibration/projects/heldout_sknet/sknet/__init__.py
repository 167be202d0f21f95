"""sknet: wrap a torch module in an estimator with fit, predict and predict_proba."""

from sknet.classifier import NeuralNetClassifier
from sknet.history import History
from sknet.net import NeuralNet

__all__ = ["History", "NeuralNet", "NeuralNetClassifier"]
