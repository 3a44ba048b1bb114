"""XDR (RFC 4506) and ONC RPC (RFC 5531): the interface compiler and the RPC runtime.

Nothing here knows about CUDA; the rest of the project builds on it.
"""
