"""statectl: operate stateful Spark Structured Streaming jobs on Kafka."""

__version__ = "0.6.0"
