"""vcjob's one layer between its processes and the Kubernetes API (and the process itself):
signals, and — moved here step by step — the API client, error classes, list-watch cache,
work queue, event recorder and logging setup. Every process package may import it; it imports
none of them."""
