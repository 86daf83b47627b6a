"""Reading Structured Streaming checkpoints without Spark: layout, restore plan, health.

``inspect.inspect_checkpoint`` is the one entry point the CLI calls; the modules underneath
(``reader``, ``restore``, ``health``, ``checksum``) are pure Python and never write.
"""
