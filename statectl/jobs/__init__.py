"""Job topologies and their StatefulProcessors. They use the Spark adapter, never the CLI."""
