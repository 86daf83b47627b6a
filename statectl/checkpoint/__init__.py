"""Reading Structured Streaming checkpoints without Spark: layout, progress, restore plan, restart
needs, health and integrity, state rows through Spark's reader — and the lock beside a checkpoint,
which is how the commands that read it and those that change it agree.

Nothing here changes a checkpoint (the commands that do live in ``statectl.maintenance``).
``inspect.inspect_checkpoint`` is the entry point of ``inspect-state``; ``decode`` holds the byte
decoders (Spark's log and metadata formats, LZ4 blocks, Java zips, checksums).
"""
