-- The name of the database with this OID (a relation path names its database by OID only): no row when none has it.
SELECT datname FROM pg_database WHERE oid = %(oid)s::oid
