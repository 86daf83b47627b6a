"""Test data: the data sets (seed files and synthetic generators) and sending them to Kafka."""
