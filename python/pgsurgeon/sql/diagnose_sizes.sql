-- Main fork and visibility map sizes (pg_relation_size opens the relation: AccessShareLock, under lock_timeout).
SELECT r.oid::bigint, pg_relation_size(r.oid::regclass, 'main'), pg_relation_size(r.oid::regclass, 'vm')
FROM unnest(%(oids)s::oid[]) AS r(oid)
