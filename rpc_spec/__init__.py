"""The wire protocol's single source of truth: `.x` interface files and the Python generated from them."""
