-- One setting of a session (set_config, so the value is a parameter, not SQL text).
SELECT pg_catalog.set_config(%(name)s, %(value)s, false)
