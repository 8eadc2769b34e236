"""The end-to-end corruption lab (`pgsurgeon lab` without a verb): scenarios, runner, observation, reports."""
