"""Admission rules for Volcano's other objects (Queue, PodGroup, Pod, HyperNode) and the Job
rules Volcano words its own way. Each rule is a pure function of the object (`validate_x(value,
path) -> list[FieldError]`, or a defaulting function returning the defaulted copy);
`webhook.objects_review` does the wire."""
