-- Main fork and visibility map sizes in bytes (pg_relation_size opens the relation: AccessShareLock, so callers
-- that must not wait run it under lock_timeout).
SELECT r.oid::bigint, pg_relation_size(r.oid::regclass, 'main'), pg_relation_size(r.oid::regclass, 'vm')
FROM unnest(%(oids)s::oid[]) AS r(oid)
