"""Admission of JobFlows and JobTemplates: the review and the rules."""
