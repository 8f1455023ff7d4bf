"""vcjob's vcctl: `vcjob job …` and `vcjob queue …` (also `kubectl vcjob …`)."""
