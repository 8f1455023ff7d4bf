"""The PodGroup controller for plain workloads: a PodGroup for each gang pod without one."""
