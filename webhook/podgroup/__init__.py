"""Admission of PodGroups: the review, the queue default and the rules."""
