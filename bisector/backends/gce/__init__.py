"""The gce backend: kubemark on GCE with the candidate's own scripts, and its twin."""
