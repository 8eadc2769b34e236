"""The columns every line of a ``.deleted`` file starts with (salvage --deleted and unload --deleted), before the
table's own: where the removed row version was, who wrote and removed it, when, and how it was found."""

DELETED_COLUMNS = ["block", "lp", "xmin", "xmin_committed_at", "deleted_by", "deleted_at", "how"]
