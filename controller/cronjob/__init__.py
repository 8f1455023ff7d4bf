"""The CronJob controller: a pure schedule decision and the shell that performs it."""
