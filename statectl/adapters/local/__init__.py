"""Local tools statectl runs on this machine, which the CLI may drive directly: the Kafka broker
process (broker) and the secured broker's files (broker_secure), jar resolution with Maven (jars),
the Spark driver's class-data archive (jvm_archive), and the one JDK look-up (jdk)."""
