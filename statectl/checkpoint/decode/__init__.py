"""The byte decoders a checkpoint needs: Spark's offset, commit and metadata files (formats), LZ4
blocks (lz4block), zips as Java writes them (javazip), and the checksums beside them (checksum)."""
