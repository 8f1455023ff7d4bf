"""The Job's admission rules, one module per topic: each rule a pure function
`validate_x(spec, path) -> list[FieldError]` with its own table test; `webhook.job.create` and
`webhook.job.update` say which run. Also the Job warnings (`job_warnings`) and Volcano's phrases
(`wording`)."""
