"""Admission of HyperNodes: the review and the rules."""
