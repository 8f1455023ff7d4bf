"""Admission of Volcano Jobs: the review, the defaults, the reading into the model and the rules."""
