"""Where checkpoints live: a local disk or an object store (``s3a://``), behind one set of path
operations, so every command that reads or changes a checkpoint works on both.

A local checkpoint is a ``pathlib.Path`` and goes through ``os`` as before (same speed); an
object-store checkpoint is an :class:`~statectl.storage.objects.ObjectPath`, whose operations
are requests to the store, answered from one listing wherever a listing already told.
"""
