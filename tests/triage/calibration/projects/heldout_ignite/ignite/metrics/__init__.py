from ignite.metrics.loss import Loss
from ignite.metrics.mean_squared_error import MeanSquaredError
from ignite.metrics.metric import BatchFiltered, BatchWise, EpochWise, Metric, MetricUsage
from ignite.metrics.metrics_lambda import MetricsLambda

__all__ = [
    "Metric",
    "Loss",
    "MetricsLambda",
    "MeanSquaredError",
]
