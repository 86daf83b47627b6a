"""Adapters: the only modules that import confluent_kafka or pyspark."""
