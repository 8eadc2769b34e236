-- The commit status of one 32-bit transaction ID as a tuple header holds it, its epoch from the snapshot's xmax
-- (one past the latest finished transaction: running ones may lie past it, so only an ID more than half the XID space
-- ahead belongs to the previous epoch).
WITH nx AS (SELECT pg_snapshot_xmax(pg_current_snapshot())::text::bigint AS full_next)
SELECT pg_xact_status((CASE WHEN ((full_next >> 32) << 32 | %(xid)s::bigint) >= full_next + 2147483648
                            THEN ((full_next >> 32) << 32 | %(xid)s::bigint) - 4294967296
                            ELSE ((full_next >> 32) << 32 | %(xid)s::bigint) END)::text::xid8)
FROM nx
