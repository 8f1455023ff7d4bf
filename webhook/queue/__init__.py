"""Admission of Queues: the review, the defaults, the rules and what they read from the cache."""
