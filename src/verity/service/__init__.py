"""The HTTP service: a job store, a worker pool and the API over them (`verity serve`)."""
