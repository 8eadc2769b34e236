-- One setting of the repair session (set_config, so the value is a parameter, not SQL text).
SELECT set_config(%(name)s, %(value)s, false)
