"""Adapters, by what they talk to: Kafka (``kafka``), Spark (``spark``), and the local tools the CLI
may drive directly (``local``: the broker process, the secured broker's files, jar resolution, the
driver JVM's class-data archive). The only modules that import confluent_kafka, pyspark or py4j."""
