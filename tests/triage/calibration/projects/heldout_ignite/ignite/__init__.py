import ignite.distributed
import ignite.engine
import ignite.exceptions
import ignite.metrics
import ignite.utils

__version__ = "0.6.0"
