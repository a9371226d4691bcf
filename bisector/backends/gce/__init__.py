"""The gce backend: kubemark on GCE with the candidate's own scripts (its twin: bisector.twin)."""
