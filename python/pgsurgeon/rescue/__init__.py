"""Rescue of the cluster's own bookkeeping: a lost pg_xact segment rebuilt from evidence (:mod:`.xact`)."""
