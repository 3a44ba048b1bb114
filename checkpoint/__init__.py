"""Checkpoint/restart of GPU state: on-disk format, writer, reader, verifier, restore."""
