"""The commands that change a checkpoint: reset, repartition-state and relocate-checkpoint.

Each computes a plan (pure, from what ``statectl.checkpoint`` reads), the CLI shows it, and only
then is it applied, under the checkpoint's lock, after a backup made by ``backup`` (one rule for
``--backup-dir``, documented there).
"""
