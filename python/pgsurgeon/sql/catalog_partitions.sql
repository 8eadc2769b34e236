-- The leaf partitions of a partitioned table (they hold the rows; the parent has no storage).
SELECT relid::oid::bigint FROM pg_partition_tree(%(oid)s::oid::regclass) WHERE isleaf
