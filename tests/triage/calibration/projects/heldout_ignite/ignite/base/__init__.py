from ignite.base.mixins import Serializable, ResettableHandler
