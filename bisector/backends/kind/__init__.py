"""The kind backend: kubemark inside a kind cluster."""
