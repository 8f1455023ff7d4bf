"""A generic Kubernetes API server for the local control plane."""
