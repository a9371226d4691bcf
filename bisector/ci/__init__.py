"""Kubernetes CI history: run metadata in GCS, and where a metric stepped up."""
