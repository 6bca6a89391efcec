"""The web console: a static, hand-written client of the REST API, served under /console."""
