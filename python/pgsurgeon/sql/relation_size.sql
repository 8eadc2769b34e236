-- A relation's main fork size now (it may have grown or shrunk since the check started).
SELECT pg_relation_size(%(oid)s::oid::regclass, 'main')
