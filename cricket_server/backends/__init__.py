"""Backends that execute CUDA work: `cuda` (cuda-python, the product) and `sim` (software)."""
