"""cricket-server: executes remote CUDA driver/runtime calls on a GPU node."""
