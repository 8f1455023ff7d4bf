"""Admission of CronJobs: the review, the defaults and the rules (a template is judged as a Job)."""
