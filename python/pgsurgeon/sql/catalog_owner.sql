-- A relation named by its filenode or as a TOAST table (its name in pg_toast), and the table its rows belong to: an index's table, the table
-- whose TOAST table it is (for the TOAST table's index too), else itself. Errors name any of them; the commands
-- that act on the damage take the table (salvage, repair) or the index (REINDEX).
WITH rel AS (
    SELECT c.oid, c.relkind
      FROM pg_class c
     WHERE (%(filenode)s::oid IS NOT NULL AND pg_relation_filenode(c.oid) = %(filenode)s::oid)
        OR (%(toast)s::text IS NOT NULL AND c.relname = %(toast)s::text AND c.relnamespace = 'pg_toast'::regnamespace)
     LIMIT 1
), base AS (
    SELECT rel.oid, rel.relkind, coalesce(i.indrelid, rel.oid) AS tab
      FROM rel LEFT JOIN pg_index i ON i.indexrelid = rel.oid
)
SELECT base.oid::regclass::text, base.relkind::text, coalesce(o.oid, base.tab)::regclass::text,
       base.oid < 16384 AS system
  FROM base LEFT JOIN pg_class o ON o.reltoastrelid = base.tab
