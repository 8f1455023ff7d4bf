"""Admission of Pods: the review, the queue allocation gate and the disruption budget rules."""
